package gateway_test

import (
	"os"
	"testing"

	"github.com/toolgate/toolgate/internal/testkit/childupstream"
)

func TestMain(m *testing.M) {
	childupstream.Main() // a child upstream, when the command line names one
	os.Exit(m.Run())
}
