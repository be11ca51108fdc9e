package policytest_test

import (
	"slices"
	"strconv"
)

func itoa(i int) string { return strconv.Itoa(i) }

func sortStrings(s []string) { slices.Sort(s) }
