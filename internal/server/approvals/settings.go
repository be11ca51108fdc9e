package approvals

import "github.com/toolgate/toolgate/internal/servesettings"

// Settings are the approval gate's settings of `toolgate serve`
// (docs/contract.md §13), which Options embeds, declared with the other
// serve settings (servesettings.Approvals) so that the settings table need
// not import this package. The zero value takes every default.
type Settings = servesettings.Approvals
