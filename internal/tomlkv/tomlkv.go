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
			// Fix (tests): a quoted key with dots ("a.b" = 1) and a dotted
			// key or table (a.b = 2) flatten to the same name; one of them
			// was silently dropped.
			if _, dup := out[full]; dup {
				return fmt.Errorf("%s:%d: key %q: %w: set twice (as a quoted and as a dotted key)", name, lineOf(lines, full), full, ErrSyntax)
			}
			switch v := m[k].(type) {
			case map[string]any:
				if err := walk(full+".", v); err != nil {
					return err
				}
			case string:
				out[full] = Value{Text: v, Line: lineOf(lines, full)}
			case int64:
				out[full] = Value{Text: strconv.FormatInt(v, 10), Line: lineOf(lines, full)}
			case float64:
				out[full] = Value{Text: strconv.FormatFloat(v, 'g', -1, 64), Line: lineOf(lines, full)}
			case bool:
				out[full] = Value{Text: strconv.FormatBool(v), Line: lineOf(lines, full)}
			default:
				return fmt.Errorf("%s:%d: key %q: %w: only strings, numbers and booleans are allowed", name, lineOf(lines, full), full, ErrSyntax)
			}
		}
		return nil
	}
	if err := walk("", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// KeyLine returns the 1-based line of data (a TOML file) that sets the
// dotted key ("rows.a.read_mibs") or opens its table ("rows.a"); for a key
// inside an inline table or an array of tables, the line of its nearest
// enclosing key or table header; 0 if none is found. It is for messages
// about files decoded elsewhere (with toml.Decode).
func KeyLine(data []byte, key string) int { return lineOf(keyLines(data), key) }

// lineOf returns the line of key, or, for a key keyLines did not see
// (one inside an inline table "t = { k = 1 }", or an array of tables),
// the line of its nearest enclosing key or table header.
// Fix (tests): such keys were reported at line 0.
func lineOf(lines map[string]int, key string) int {
	for {
		if n, ok := lines[key]; ok {
			return n
		}
		i := strings.LastIndexByte(key, '.')
		if i < 0 {
			return 0
		}
		key = key[:i]
	}
}

// keyLines finds the line of each "key = value" assignment, tracking
// [table] headers; dotted keys on the left-hand side are joined.
func keyLines(data []byte) map[string]int {
	lines := make(map[string]int)
	table := ""
	// Fix (tests): a UTF-8 byte order mark hid the first key, and lines
	// inside multi-line strings were taken for keys and table headers.
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	inString := "" // the delimiter of the multi-line string being skipped
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		if inString != "" {
			if strings.Count(l, inString)%2 == 1 {
				inString = ""
			}
			continue
		}
		if l == "" || l[0] == '#' {
			continue
		}
		for _, delim := range []string{`"""`, `'''`} {
			if strings.Count(l, delim)%2 == 1 {
				inString = delim
				break
			}
		}
		if l[0] == '[' {
			end := strings.IndexByte(l, ']')
			if end > 0 {
				table = unquoteKey(strings.Trim(l[1:end], "[] \t"))
				// Fix (tests): remember the header's line for the keys
				// lineOf cannot find (arrays of tables).
				if _, seen := lines[table]; !seen {
					lines[table] = n
				}
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
