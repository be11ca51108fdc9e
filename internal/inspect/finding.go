package inspect

import (
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/toolcall"
)

// Codes of the findings Check reports. They are stable: scripts match on
// them, never on a message.
const (
	// Errors.
	CodeRegistryUnreadable = "registry_unreadable"   // the registry file cannot be read
	CodeRegistryParse      = "registry_parse"        // not well-formed YAML or JSON
	CodeRegistryInvalid    = "registry_invalid"      // one problem of a registry that does not validate
	CodePolicyCompile      = "policy_compile"        // one diagnostic of policies that do not compile
	CodePolicyLoad         = "policy_load"           // the policy directory cannot be read or prepared
	CodeTypeInvalid        = "type_invalid"          // an internal type's schema does not compile
	CodeMethodUnknown      = "method_unknown"        // a row's method is not registered
	CodeArgumentUnknown    = "argument_unknown"      // a row declares an argument its method lacks
	CodeGrantFailed        = "grant_failed"          // the grant decision fails for a caller
	CodeResourceFailed     = "resource_failed"       // data.toolgate.grant.resource fails for a caller
	CodeURLUndecided       = "url_drivers_undecided" // a URL driver is granted, url_drivers_decided is not true
	CodeConfigInvalid      = "config_invalid"        // a problem of the serve config file (--config)
	CodeGrantedConflict    = "granted_conflict"      // two complete granted rules hold for one caller tried
	CodeConfigMissing      = "config_missing"        // a file, variable or command the config file names is not there (--config)

	// Warnings.
	CodeRegistryWarning   = "registry_warning"   // Parse's own warnings (a section sections does not list)
	CodeURLReach          = "url_driver_reach"   // a URL driver is granted while tools are hidden
	CodeGrantedUnknown    = "granted_unknown"    // an override grants a name no row has
	CodeRolesCapped       = "role_sets_capped"   // too many roles: not every combination was checked
	CodeCredentialLiteral = "credential_literal" // an upstream's header, env, client secret or url (user information, query) holds a literal credential, not ${...} (docs/contract.md §17)
	CodeConfigRenamed     = "config_renamed"     // a serve config key under its former camelCase name (docs/contract.md §8)
	CodeRuleUnread        = "rule_unread"        // a rule toolgate never reads, in or next to a package it reads
	CodeNoDefault         = "no_default"         // resource rules that are only ever true, without a default: they hide nothing
)

// Finding is one error or warning of a [CheckReport].
type Finding struct {
	// Code is one of the Code constants.
	Code string `json:"code"`
	// Message says what is wrong, in full.
	Message string `json:"message"`
	// File is the registry or policy file the finding is about, as given;
	// empty when it is about no file.
	File string `json:"file,omitempty"`
	// Line and Col locate it in File (policy diagnostics, registry parse
	// errors); zero when unknown.
	Line int `json:"line,omitempty"`
	Col  int `json:"col,omitempty"`
	// Row is the index of the registry row, nil when the finding is about
	// no row; Tool is that row's name.
	Row  *int   `json:"row,omitempty"`
	Tool string `json:"tool,omitempty"`
	// Field is the path of the offending value inside the row (or the
	// document, without Row), e.g. "arguments[0].name".
	Field string `json:"field,omitempty"`
	// Caller is the caller or role combination a reach finding is about.
	Caller *toolcall.Caller `json:"caller,omitempty"`
	// Tools lists the tools a finding names: for url_driver_reach the
	// hidden ones, for granted_unknown the names no row has.
	Tools []string `json:"tools,omitempty"`
}

// Where renders the finding's location: `file:line:col: tools[2] (name):
// field`, leaving out what is unknown; "" when it has none.
func (f Finding) Where() string {
	var parts []string
	if f.File != "" {
		s := f.File
		if f.Line > 0 {
			s += ":" + strconv.Itoa(f.Line)
			if f.Col > 0 {
				s += ":" + strconv.Itoa(f.Col)
			}
		}
		parts = append(parts, s)
	}
	if f.Row != nil {
		s := "tools[" + strconv.Itoa(*f.Row) + "]"
		if f.Tool != "" {
			s += " (" + f.Tool + ")"
		}
		parts = append(parts, s)
	}
	if f.Field != "" {
		parts = append(parts, f.Field)
	}
	if f.Caller != nil {
		parts = append(parts, CallerLabel(f.Caller))
	}
	return strings.Join(parts, ": ")
}

// String renders the finding as `code: where: message`.
func (f Finding) String() string {
	if w := f.Where(); w != "" {
		return f.Code + ": " + w + ": " + f.Message
	}
	return f.Code + ": " + f.Message
}

// CallerLabel names a caller for people: `alice (roles: manager, admin)`,
// `(no roles)` for a caller without roles; "nobody" for nil.
func CallerLabel(c *toolcall.Caller) string {
	if c == nil {
		return "nobody"
	}
	roles := "no roles"
	if len(c.Roles) > 0 {
		roles = "roles: " + strings.Join(c.Roles, ", ")
	}
	if c.Subject == "" {
		return "(" + roles + ")"
	}
	return c.Subject + " (" + roles + ")"
}

func rowPtr(i int) *int { return &i }
