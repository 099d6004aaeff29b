package lint

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repoRoot is the repository root, relative to this package.
const repoRoot = "../.."

// modulePath is the module the model packages belong to.
const modulePath = "github.com/blksim/blksim"

// modelPackages are the directories (relative to the repository root)
// whose code runs inside the simulation.
var modelPackages = []string{"sim", "blockdev", "fsmodel", "workload", "writeback", "pagecache"}

// allowed lists accepted violations, as "dir/file.go: rule" (a rule is the
// text of a finding before any detail in parentheses). Keep it short and
// say why. A wall-clock engine file (DESIGN.md section 2: real device
// completions arrive through a thread-safe inbox) would go here.
// (sim/task.go's iter.Pull needs no entry: it is not a go statement.)
var allowed = map[string]string{}

// Rule texts.
const (
	ruleWallClock   = "wall clock"
	ruleGo          = "go statement"
	ruleChan        = "channel type"
	ruleSend        = "channel send"
	ruleRecv        = "channel receive"
	ruleSelect      = "select statement"
	ruleRangeChan   = "range over a channel"
	ruleSync        = "import of package sync"
	ruleGlobalRand  = "global math/rand"
	ruleLockThread  = "runtime.LockOSThread"
	ruleMapRange    = "range over a map"
	ruleMapIterator = "map iterator"
)

// wallClock are the time functions that read or wait on the real clock.
var wallClock = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"AfterFunc": true, "Tick": true, "NewTimer": true, "NewTicker": true,
}

// randConstructors are the math/rand functions that build a seeded
// generator instead of drawing from the global one.
var randConstructors = map[string]bool{
	"New": true, "NewPCG": true, "NewChaCha8": true, "NewSource": true, "NewZipf": true,
}

// finding is one violation.
type finding struct {
	pos  token.Position
	rule string
}

func (f finding) String() string {
	return fmt.Sprintf("%s:%d: %s", f.pos.Filename, f.pos.Line, f.rule)
}

// options select the rules that depend on the package.
type options struct {
	// noMapOrder forbids iterating over maps (in sim/, where iteration
	// order could change which task runs next).
	noMapOrder bool
}

// check type-checks one package's files and returns its violations.
func check(fset *token.FileSet, files []*ast.File, imp types.Importer, opt options) ([]finding, error) {
	info := &types.Info{
		Types: make(map[ast.Expr]types.TypeAndValue),
		Uses:  make(map[*ast.Ident]types.Object),
	}
	conf := types.Config{Importer: imp}
	if _, err := conf.Check(files[0].Name.Name, fset, files, info); err != nil {
		return nil, err
	}
	var out []finding
	add := func(n ast.Node, rule string) {
		out = append(out, finding{fset.Position(n.Pos()), rule})
	}
	for _, f := range files {
		for _, spec := range f.Imports {
			path, _ := strconv.Unquote(spec.Path.Value)
			if path == "sync" || path == "sync/atomic" {
				add(spec, ruleSync+" ("+path+")")
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				add(n, ruleGo)
			case *ast.ChanType:
				add(n, ruleChan)
			case *ast.SendStmt:
				add(n, ruleSend)
			case *ast.UnaryExpr:
				if n.Op == token.ARROW {
					add(n, ruleRecv)
				}
			case *ast.SelectStmt:
				add(n, ruleSelect)
			case *ast.RangeStmt:
				switch info.TypeOf(n.X).Underlying().(type) {
				case *types.Chan:
					add(n, ruleRangeChan)
				case *types.Map:
					if opt.noMapOrder {
						add(n, ruleMapRange)
					}
				}
			case *ast.Ident:
				fn, ok := info.Uses[n].(*types.Func)
				if !ok || fn.Pkg() == nil || fn.Type().(*types.Signature).Recv() != nil {
					return true
				}
				name := fn.Pkg().Path() + "." + fn.Name()
				switch fn.Pkg().Path() {
				case "time":
					if wallClock[fn.Name()] {
						add(n, ruleWallClock+" ("+name+")")
					}
				case "math/rand", "math/rand/v2":
					if !randConstructors[fn.Name()] {
						add(n, ruleGlobalRand+" ("+name+"; use the engine's seeded generator)")
					}
				case "runtime":
					if fn.Name() == "LockOSThread" {
						add(n, ruleLockThread)
					}
				case "maps":
					if opt.noMapOrder && (fn.Name() == "All" || fn.Name() == "Keys" || fn.Name() == "Values") {
						add(n, ruleMapIterator+" ("+name+")")
					}
				}
			}
			return true
		})
	}
	return out, nil
}

// moduleImporter type-checks the module's own packages from source (so
// the test sees the working tree, not a build cache) and imports the
// standard library and third-party modules from export data (the latter
// located with `go list -export`).
type moduleImporter struct {
	fset *token.FileSet
	std  types.Importer
	deps types.Importer
	pkgs map[string]*types.Package
}

func newModuleImporter(fset *token.FileSet) *moduleImporter {
	m := &moduleImporter{fset: fset, std: importer.Default(), pkgs: map[string]*types.Package{}}
	var exports map[string]string
	m.deps = importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if exports == nil {
			cmd := exec.Command("go", "list", "-e", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}", "./...")
			cmd.Dir = repoRoot
			out, err := cmd.Output()
			if err != nil {
				return nil, fmt.Errorf("go list -export: %w", err)
			}
			exports = map[string]string{}
			for _, line := range strings.Split(string(out), "\n") {
				if k, v, ok := strings.Cut(line, " "); ok && v != "" {
					exports[k] = v
				}
			}
		}
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	return m
}

func (m *moduleImporter) Import(path string) (*types.Package, error) {
	rel, ok := strings.CutPrefix(path, modulePath)
	if !ok || (rel != "" && rel[0] != '/') {
		if p, err := m.std.Import(path); err == nil {
			return p, nil
		}
		return m.deps.Import(path)
	}
	if p, ok := m.pkgs[path]; ok {
		return p, nil
	}
	files, err := parseDir(m.fset, filepath.Join(repoRoot, filepath.FromSlash(strings.TrimPrefix(rel, "/"))))
	if err != nil {
		return nil, err
	}
	conf := types.Config{Importer: m}
	p, err := conf.Check(path, m.fset, files, nil)
	if err != nil {
		return nil, fmt.Errorf("type-checking %s: %w", path, err)
	}
	m.pkgs[path] = p
	return p, nil
}

// parseDir parses the non-test Go files of dir, in name order.
func parseDir(fset *token.FileSet, dir string) ([]*ast.File, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no Go files in %s", dir)
	}
	return files, nil
}

// TestModelCodeRules checks DESIGN.md's rules for model code on the
// working tree's model packages.
func TestModelCodeRules(t *testing.T) {
	fset := token.NewFileSet()
	imp := newModuleImporter(fset)
	for _, dir := range modelPackages {
		t.Run(dir, func(t *testing.T) {
			files, err := parseDir(fset, filepath.Join(repoRoot, dir))
			require.NoError(t, err)
			findings, err := check(fset, files, imp, options{noMapOrder: dir == "sim"})
			require.NoError(t, err, "type-checking %s (does the tree build?)", dir)
			var bad []string
			for _, f := range findings {
				rel, err := filepath.Rel(repoRoot, f.pos.Filename)
				require.NoError(t, err)
				rel = filepath.ToSlash(rel)
				rule, _, _ := strings.Cut(f.rule, " (")
				if _, ok := allowed[rel+": "+rule]; ok {
					continue
				}
				bad = append(bad, fmt.Sprintf("%s:%d: %s", rel, f.pos.Line, f.rule))
			}
			assert.Empty(t, bad, "model code must be deterministic (DESIGN.md section 2):\n%s", strings.Join(bad, "\n"))
		})
	}
}

// TestAllowedEntriesAreUsed keeps the allow list honest: every entry names
// an existing file.
func TestAllowedEntriesAreUsed(t *testing.T) {
	for k, why := range allowed {
		file, _, ok := strings.Cut(k, ": ")
		require.True(t, ok, "entry %q", k)
		assert.NotEmpty(t, why, "entry %q needs a reason", k)
		_, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(file)))
		assert.NoError(t, err, "entry %q names a missing file", k)
	}
}

// TestChecker runs the checker on small sources, one rule each, so that a
// clean tree means the rules work rather than that they never fire.
func TestChecker(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		sim    bool
		expect []string // "line: rule" prefixes, in order
	}{
		{
			name: "clean model code",
			src: `package m
import (
	"iter"
	"math/rand/v2"
	"time"
)
type T struct{ rng *rand.Rand; d time.Duration }
func New(seed uint64) *T { return &T{rng: rand.New(rand.NewPCG(seed, 1)), d: 3 * time.Millisecond} }
func (t *T) Draw() int { return t.rng.IntN(10) }
func Steps(seq iter.Seq[int]) (func() (int, bool), func()) { return iter.Pull(seq) }
func Sum(m map[string]int) (n int) { for _, v := range m { n += v }; return n }
func D() time.Duration { return time.Duration(5) * time.Second }
`,
		},
		{
			name: "wall clock",
			src: `package m
import "time"
func A() time.Time { return time.Now() }
func B(t time.Time) time.Duration { return time.Since(t) }
func C() { time.Sleep(time.Millisecond) }
func D() { _ = time.After(1); _ = time.Tick(1) }
var f = time.Now
`,
			expect: []string{
				"3: wall clock (time.Now)", "4: wall clock (time.Since)", "5: wall clock (time.Sleep)",
				"6: wall clock (time.After)", "6: wall clock (time.Tick)", "7: wall clock (time.Now)",
			},
		},
		{
			name: "renamed import",
			src: `package m
import clock "time"
func A() { clock.Sleep(1) }
`,
			expect: []string{"3: wall clock (time.Sleep)"},
		},
		{
			name: "goroutines and channels",
			src: `package m
func A() {
	c := make(chan int, 1)
	go func() { c <- 1 }()
	<-c
	select {}
}
func B(c <-chan int) { for range c {} }
`,
			expect: []string{
				"3: channel type", "4: go statement", "4: channel send", "5: channel receive",
				"6: select statement", "8: channel type", "8: range over a channel",
			},
		},
		{
			name: "sync",
			src: `package m
import (
	"sync"
	"sync/atomic"
)
var mu sync.Mutex
var n atomic.Int64
`,
			expect: []string{"3: import of package sync (sync)", "4: import of package sync (sync/atomic)"},
		},
		{
			name: "global math/rand",
			src: `package m
import (
	"math/rand"
	r2 "math/rand/v2"
)
func A() int { return rand.Intn(3) + r2.IntN(3) }
func B() { rand.Seed(1); r2.Shuffle(2, func(i, j int) {}) }
func C() *rand.Rand { return rand.New(rand.NewSource(1)) }
`,
			expect: []string{
				"6: global math/rand (math/rand.Intn", "6: global math/rand (math/rand/v2.IntN",
				"7: global math/rand (math/rand.Seed", "7: global math/rand (math/rand/v2.Shuffle",
			},
		},
		{
			name: "LockOSThread",
			src: `package m
import "runtime"
func A() { runtime.LockOSThread(); runtime.Gosched() }
`,
			expect: []string{"3: runtime.LockOSThread"},
		},
		{
			name: "map range in sim",
			sim:  true,
			src: `package m
import "maps"
type M map[int]string
func A(m map[string]int, n M, s []int) {
	for k := range m { _ = k }
	for range n {}
	for range s {}
	for range maps.Keys(m) {}
}
`,
			expect: []string{"5: range over a map", "6: range over a map", "8: map iterator (maps.Keys)"},
		},
		{
			name: "shadowed package name is not the package",
			src: `package m
type clock struct{}
func (clock) Now() int { return 0 }
func A() int { time := clock{}; return time.Now() }
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "m.go", tc.src, parser.SkipObjectResolution)
			require.NoError(t, err)
			findings, err := check(fset, []*ast.File{f}, importer.Default(), options{noMapOrder: tc.sim})
			require.NoError(t, err)
			var got []string
			for _, f := range findings {
				got = append(got, fmt.Sprintf("%d: %s", f.pos.Line, f.rule))
			}
			slices.SortStableFunc(got, func(a, b string) int {
				la, _ := strconv.Atoi(strings.SplitN(a, ":", 2)[0])
				lb, _ := strconv.Atoi(strings.SplitN(b, ":", 2)[0])
				return la - lb
			})
			require.Len(t, got, len(tc.expect), "findings:\n%s", strings.Join(got, "\n"))
			for i, want := range tc.expect {
				assert.True(t, strings.HasPrefix(got[i], want), "finding %d is %q, want %q", i, got[i], want)
			}
		})
	}
}
