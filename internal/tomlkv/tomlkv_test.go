package tomlkv

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFlattens(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]Value
	}{
		{
			name: "empty",
			in:   "",
			want: map[string]Value{},
		},
		{
			name: "only comments and blank lines",
			in:   "# a comment\n\n   # another = 1\n",
			want: map[string]Value{},
		},
		{
			name: "top-level keys of every type",
			in: `s = "p3600"
i = 3
f = 1.5
b = true
n = false
`,
			want: map[string]Value{
				"s": {"p3600", 1},
				"i": {"3", 2},
				"f": {"1.5", 3},
				"b": {"true", 4},
				"n": {"false", 5},
			},
		},
		{
			name: "numbers are normalised to decimal",
			in: `hex = 0x10
oct = 0o17
bin = 0b101
under = 1_000
neg = -3
exp = 1e3
small = 2.5e-3
`,
			want: map[string]Value{
				"hex":   {"16", 1},
				"oct":   {"15", 2},
				"bin":   {"5", 3},
				"under": {"1000", 4},
				"neg":   {"-3", 5},
				"exp":   {"1000", 6},
				"small": {"0.0025", 7},
			},
		},
		{
			name: "literal strings keep their text",
			in:   "a = '128k'\nb = \"60us\"\nc = \"with # hash\" # comment\n",
			want: map[string]Value{
				"a": {"128k", 1},
				"b": {"60us", 2},
				"c": {"with # hash", 3},
			},
		},
		{
			name: "tables",
			in: `# a stack
fs = "ext4"

[ext4]
parallel_dio_reads = true
# a comment between keys
iomap_dio = false

[host]
cpus = 16
`,
			want: map[string]Value{
				"fs":                      {"ext4", 2},
				"ext4.parallel_dio_reads": {"true", 5},
				"ext4.iomap_dio":          {"false", 7},
				"host.cpus":               {"16", 10},
			},
		},
		{
			name: "dotted keys at top level and in a table",
			in: `device.profile = "p3600"
ext4.iomap_dio = true
[host]
rwsem.spin = true
`,
			want: map[string]Value{
				"device.profile":  {"p3600", 1},
				"ext4.iomap_dio":  {"true", 2},
				"host.rwsem.spin": {"true", 4},
			},
		},
		{
			name: "nested table headers",
			in: `[a.b]
c = 1
[a]
d = 2
[ a . e ]
f = 3
`,
			want: map[string]Value{
				"a.b.c": {"1", 2},
				"a.d":   {"2", 4},
				"a.e.f": {"3", 6},
			},
		},
		{
			name: "quoted keys",
			in: `"fs" = "ext4"
[ext4]
'iomap_dio' = true
["host"]
"cpus" = 8
`,
			want: map[string]Value{
				"fs":             {"ext4", 1},
				"ext4.iomap_dio": {"true", 3},
				"host.cpus":      {"8", 5},
			},
		},
		{
			name: "indentation and no spaces around =",
			in:   "[ext4]\n  iomap_dio=true\n\t\tdioread_nolock   =   false\n",
			want: map[string]Value{
				"ext4.iomap_dio":      {"true", 2},
				"ext4.dioread_nolock": {"false", 3},
			},
		},
		{
			name: "CRLF line endings",
			in:   "fs = \"ext4\"\r\n\r\n[host]\r\ncpus = 4\r\n",
			want: map[string]Value{
				"fs":        {"ext4", 1},
				"host.cpus": {"4", 4},
			},
		},
		{
			name: "byte order mark",
			in:   "\ufefffs = \"ext4\"\nhost.cpus = 2\n",
			want: map[string]Value{
				"fs":        {"ext4", 1},
				"host.cpus": {"2", 2},
			},
		},
		{
			name: "inline table takes the line of its key",
			in:   "fs = \"ext4\"\n\next4 = { iomap_dio = true, dioread_nolock = false }\n",
			want: map[string]Value{
				"fs":                  {"ext4", 1},
				"ext4.iomap_dio":      {"true", 3},
				"ext4.dioread_nolock": {"false", 3},
			},
		},
		{
			name: "multi-line strings do not look like keys or tables",
			in: `name = """
[host]
cpus = 3
"""
cpus = 4
note = '''
x = 1
'''
x = 2
`,
			want: map[string]Value{
				"name": {"[host]\ncpus = 3\n", 1},
				"cpus": {"4", 5},
				"note": {"x = 1\n", 6},
				"x":    {"2", 9},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse("stack.toml", []byte(tc.in))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name string
		in   string
		// want are substrings of the error: the file and line first.
		want []string
	}{
		{
			name: "array",
			in:   "fs = \"ext4\"\ncpus = [1, 2]\n",
			want: []string{"stack.toml:2:", `key "cpus"`, "only strings, numbers and booleans"},
		},
		{
			name: "array in a table",
			in:   "[host]\ncpus = 1\n\n[ext4]\nflags = [\"a\"]\n",
			want: []string{"stack.toml:5:", `key "ext4.flags"`, "only strings, numbers and booleans"},
		},
		{
			name: "multi-line array",
			in:   "a = 1\nlist = [\n  1,\n  2,\n]\n",
			want: []string{"stack.toml:2:", `key "list"`},
		},
		{
			name: "dotted key array",
			in:   "host.cpus = [4]\n",
			want: []string{"stack.toml:1:", `key "host.cpus"`},
		},
		{
			name: "empty array",
			in:   "\n\nx = []\n",
			want: []string{"stack.toml:3:", `key "x"`},
		},
		{
			name: "array of tables",
			in:   "fs = \"ext4\"\n[[dev]]\nname = \"a\"\n",
			want: []string{"stack.toml:2:", `key "dev"`, "only strings, numbers and booleans"},
		},
		{
			name: "date",
			in:   "a = 1\nwhen = 1979-05-27\n",
			want: []string{"stack.toml:2:", `key "when"`},
		},
		{
			name: "datetime",
			in:   "[t]\nwhen = 1979-05-27T07:32:00Z\n",
			want: []string{"stack.toml:2:", `key "t.when"`},
		},
		{
			name: "quoted dotted key and dotted key collide",
			in:   "\"ext4.iomap_dio\" = true\n[ext4]\niomap_dio = false\n",
			want: []string{"stack.toml:", `key "ext4.iomap_dio"`, "set twice"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse("stack.toml", []byte(tc.in))
			require.Error(t, err)
			assert.Nil(t, got)
			assert.ErrorIs(t, err, ErrSyntax)
			assert.True(t, strings.HasPrefix(err.Error(), tc.want[0]), "error %q should start with %q", err, tc.want[0])
			for _, w := range tc.want[1:] {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestParseSyntaxErrors(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantLine string
	}{
		{"missing value", "fs = \n", "dir/s.toml:1:"},
		{"double equals", "fs = \"ext4\"\n\ncpus = = 2\n", "dir/s.toml:3:"},
		{"unterminated string", "a = 1\nb = \"x\n", "dir/s.toml:2:"},
		{"duplicate key", "a = 1\n# c\na = 2\n", "dir/s.toml:3:"},
		{"duplicate table", "[a]\nb = 1\n[a]\nc = 2\n", "dir/s.toml:3:"},
		{"bare word value", "[host]\ncpus = sixteen\n", "dir/s.toml:2:"},
		{"bad table header", "a = 1\n[host x]\ncpus = 1\n", "dir/s.toml:2:"},
		{"key without value", "a = 1\nb\n", "dir/s.toml:2:"},
		{"integer overflow", "a = 99999999999999999999\n", "dir/s.toml:1:"},
		{"NUL byte", "a = 1\n\x00\n", "dir/s.toml:2:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse("dir/s.toml", []byte(tc.in))
			require.Error(t, err)
			assert.Nil(t, got)
			assert.ErrorIs(t, err, ErrSyntax)
			assert.True(t, strings.HasPrefix(err.Error(), tc.wantLine), "error %q should start with %q", err, tc.wantLine)
		})
	}
}

// Parse is deterministic: the same input gives the same map, and the
// same error, every time (map iteration inside must not leak out).
func TestParseDeterministic(t *testing.T) {
	in := []byte("z = 1\ny = [1]\nx = [2]\n[a]\nb = [3]\n")
	_, first := Parse("f", in)
	require.Error(t, first)
	for range 20 {
		_, err := Parse("f", in)
		require.EqualError(t, err, first.Error())
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"",
		"fs = \"ext4\"\n[ext4]\niomap_dio = true\n",
		"a.b.c = 1\n[x]\ny.z = 'q'\n",
		"a = [1, 2]\n",
		"[[a]]\nb = 1\n",
		"t = { a = 1, b = { c = 2 } }\n",
		"s = \"\"\"\n[h]\nk = 1\n\"\"\"\nk = 2\n",
		"\"a.b\" = 1\na.b = 2\n",
		"d = 1979-05-27T07:32:00Z\n",
		"a = \n",
		"\ufeffa = 1\r\n",
		"x = inf\ny = nan\nz = -0.0\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		kv, err := Parse("fuzz.toml", data)
		if err != nil {
			require.ErrorIs(t, err, ErrSyntax)
			require.Nil(t, kv)
			require.True(t, strings.HasPrefix(err.Error(), "fuzz.toml"), "error %q does not name the file", err)
			return
		}
		nlines := bytes.Count(data, []byte("\n")) + 1
		for k, v := range kv {
			if bytes.ContainsAny(data, "\"'") {
				// Quoted keys may hold '=', '.' or '#': no line promised.
				require.GreaterOrEqual(t, v.Line, 0, "key %q", k)
			} else {
				require.GreaterOrEqual(t, v.Line, 1, "key %q", k)
			}
			require.LessOrEqual(t, v.Line, nlines, "key %q", k)
		}
	})
}

func TestKeyLine(t *testing.T) {
	data := []byte("a = 1\n\n[rows.x]\nb = 2\nc = { d = 3 }\n")
	assert.Equal(t, 1, KeyLine(data, "a"))
	assert.Equal(t, 3, KeyLine(data, "rows.x"))
	assert.Equal(t, 4, KeyLine(data, "rows.x.b"))
	assert.Equal(t, 5, KeyLine(data, "rows.x.c.d"), "inside an inline table: the enclosing key's line")
	assert.Equal(t, 0, KeyLine(data, "nope"))
}
