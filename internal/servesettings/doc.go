// Package servesettings holds the settings types of `toolgate serve`'s own
// server components: the HTTP server (internal/server/httpserve), the
// approval gate (internal/server/approvals) and the shadow candidate
// (internal/server/shadow). Each of those packages names its type here
// as its Settings (an alias, not a copy), so the settings table
// (internal/config) reads and checks them without importing a server
// package: the server packages import the table's, never the reverse.
package servesettings
