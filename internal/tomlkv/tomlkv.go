// Package tomlkv reads a TOML file as a flat list of dotted keys with
// textual values and the line each key was set on, the form in which
// blksim's stack and device-profile files are validated and overridden.
package tomlkv

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// Value is one key's value as text ("true", "128k", "60us", "3") and the
// 1-based line that set it (0 if unknown).
type Value struct {
	Text string
	Line int
}

// ErrSyntax is wrapped by errors for malformed files.
var ErrSyntax = errors.New("malformed TOML")

// Parse decodes data (named name in errors) into dotted keys. Arrays and
// dates are rejected: blksim's files hold only strings, numbers and
// booleans.
func Parse(name string, data []byte) (map[string]Value, error) {
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s:%d: %w: %s", name, pe.Position.Line, ErrSyntax, pe.Message)
		}
		return nil, fmt.Errorf("%s: %w: %v", name, ErrSyntax, err)
	}
	lines := keyLines(data)
	out := make(map[string]Value)
	var walk func(prefix string, m map[string]any) error
	walk = func(prefix string, m map[string]any) error {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			full := prefix + k
			switch v := m[k].(type) {
			case map[string]any:
				if err := walk(full+".", v); err != nil {
					return err
				}
			case string:
				out[full] = Value{Text: v, Line: lines[full]}
			case int64:
				out[full] = Value{Text: strconv.FormatInt(v, 10), Line: lines[full]}
			case float64:
				out[full] = Value{Text: strconv.FormatFloat(v, 'g', -1, 64), Line: lines[full]}
			case bool:
				out[full] = Value{Text: strconv.FormatBool(v), Line: lines[full]}
			default:
				return fmt.Errorf("%s:%d: key %q: %w: only strings, numbers and booleans are allowed", name, lines[full], full, ErrSyntax)
			}
		}
		return nil
	}
	if err := walk("", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// keyLines finds the line of each "key = value" assignment, tracking
// [table] headers; dotted keys on the left-hand side are joined.
func keyLines(data []byte) map[string]int {
	lines := make(map[string]int)
	table := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		if l == "" || l[0] == '#' {
			continue
		}
		if l[0] == '[' {
			end := strings.IndexByte(l, ']')
			if end > 0 {
				table = unquoteKey(strings.Trim(l[1:end], "[] \t"))
			}
			continue
		}
		eq := strings.IndexByte(l, '=')
		if eq <= 0 {
			continue
		}
		key := unquoteKey(strings.TrimSpace(l[:eq]))
		if table != "" {
			key = table + "." + key
		}
		if _, seen := lines[key]; !seen {
			lines[key] = n
		}
	}
	return lines
}

func unquoteKey(k string) string {
	parts := strings.Split(k, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}
