package upstream

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/toolgate/toolgate/internal/fsx"
)

// ErrSecret is wrapped by every failure to resolve a `${VAR}` or
// `${file:PATH}` value of an upstream's headers, env or auth settings
// (docs/contract.md §17). Its message names the variable or the file,
// never a value.
var ErrSecret = errors.New("upstream: cannot resolve a secret")

// Expand resolves a setting's value: `${VAR}` is the variable VAR of
// toolgate's environment (set; it may be empty), `${file:PATH}` the
// content of the file PATH with one trailing newline (\n or \r\n) removed.
// References may stand anywhere in the value (`Bearer ${TOKEN}`) and any
// number of times; `$$` is a literal `$`; any other `$` is kept as it is.
// A variable that is not set, a file that cannot be read (or is not a
// regular file of at most 16 MiB), or an unterminated `${` is an error
// wrapping ErrSecret that names the variable or the path, never a value.
// lookup is os.LookupEnv when nil.
func Expand(value string, lookup func(string) (string, bool)) (string, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if !strings.Contains(value, "$") {
		return value, nil
	}
	var b strings.Builder
	for i := 0; i < len(value); {
		c := value[i]
		if c != '$' || i+1 == len(value) {
			b.WriteByte(c)
			i++
			continue
		}
		switch value[i+1] {
		case '$':
			b.WriteByte('$')
			i += 2
			continue
		case '{':
		default:
			b.WriteByte(c)
			i++
			continue
		}
		end := strings.IndexByte(value[i+2:], '}')
		if end < 0 {
			return "", fmt.Errorf("%w: an unterminated ${ at offset %d", ErrSecret, i)
		}
		ref := value[i+2 : i+2+end]
		v, err := resolveRef(ref, lookup)
		if err != nil {
			return "", err
		}
		b.WriteString(v)
		i += 2 + end + 1
	}
	return b.String(), nil
}

// resolveRef resolves the inside of one ${...}.
func resolveRef(ref string, lookup func(string) (string, bool)) (string, error) {
	if path, ok := strings.CutPrefix(ref, "file:"); ok {
		if path == "" {
			return "", fmt.Errorf("%w: ${file:} names no file", ErrSecret)
		}
		data, err := fsx.ReadFile(path)
		if err != nil {
			// fsx's errors name the path and why (missing, not regular, too
			// large, permissions), never the content.
			return "", fmt.Errorf("%w: file %s: %w", ErrSecret, path, unwrapPathError(err))
		}
		s := string(data)
		s = strings.TrimSuffix(s, "\n")
		s = strings.TrimSuffix(s, "\r")
		return s, nil
	}
	if !validVarName(ref) {
		return "", fmt.Errorf("%w: ${%s}: want ${VAR} (letters, digits, _) or ${file:PATH}", ErrSecret, ref)
	}
	v, ok := lookup(ref)
	if !ok {
		return "", fmt.Errorf("%w: environment variable %s is not set", ErrSecret, ref)
	}
	return v, nil
}

// unwrapPathError keeps the reason of a *os.PathError without repeating
// its path (the caller names it).
func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// IsReference reports whether value takes its content from outside the
// configuration: it holds a `${VAR}` or `${file:PATH}` reference. `toolgate
// check` warns about credential-looking values that do not.
func IsReference(value string) bool {
	for i := 0; i+1 < len(value); i++ {
		if value[i] == '$' {
			if value[i+1] == '$' {
				i++
				continue
			}
			if value[i+1] == '{' {
				return true
			}
		}
	}
	return false
}
