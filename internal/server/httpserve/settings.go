package httpserve

import "github.com/toolgate/toolgate/internal/servesettings"

// Settings are the HTTP server's settings of `toolgate serve`
// (docs/contract.md §11), which Options embeds, declared with the other
// serve settings (servesettings.HTTP) so that the settings table need not
// import this package. Each field's zero value is its default (the
// Default* constants).
type Settings = servesettings.HTTP
