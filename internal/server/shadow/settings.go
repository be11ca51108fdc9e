package shadow

import "github.com/toolgate/toolgate/internal/servesettings"

// Settings are the candidate policy decided beside the serving one
// (docs/shadow.md), declared with the other serve settings
// (servesettings.Shadow) so that the settings table need not import this
// package.
type Settings = servesettings.Shadow

// SettingProblem is one thing wrong with Settings (Settings.Problems).
type SettingProblem = servesettings.ShadowProblem
