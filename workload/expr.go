package workload

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// This file holds the two kinds of arithmetic fio accepts in option values:
//
//   - A value that starts with "(" is an expression for fio's own parser
//     (exp/expression-parser.y and .l, used by parse.c str_to_decimal):
//     integers, decimals, 0x hex, the operators + - * / % ^ and
//     parentheses, and unit suffixes (k, m, g, ... for sizes; us, ms, s, m,
//     h, d for times) applied to what precedes them.
//   - When fio replaces one of its keywords ($pagesize, $ncpus,
//     $mb_memory) in an option, and the option then contains + - * or /,
//     fio pipes the value through bc(1) (options.c fio_keyword_replace,
//     bc_calc): integer arithmetic with bc's precedence, no unit suffixes.
//
// Where fio's expression parser gives a result out of a corner case (a
// division or modulo by zero it reports and then ignores, a unit-less
// result it casts to a 32-bit int, an integer literal beyond 32 bits) blksim
// reports an error instead of reproducing the accident.

// errExpr is the error of a malformed or unsupported expression; callers
// turn it into a bad-value error naming the raw value.
type errExpr struct{ msg string }

func (e *errExpr) Error() string { return e.msg }

func exprErrorf(msg string) error { return &errExpr{msg: msg} }

// exprVal is a value of fio's expression parser: an integer and a double,
// computed side by side, and whether the double is the one that counts
// (has_dval).
type exprVal struct {
	i    int64
	d    float64
	hasD bool
}

// exprToken kinds.
const (
	tokEOF = iota
	tokNum
	tokSuffix
	tokOp
)

type exprToken struct {
	kind int
	op   byte
	val  exprVal
}

// exprLexer splits an expression the way fio's flex scanner does.
type exprLexer struct {
	s      string
	pos    int
	isTime bool
}

// suffixes of fio's scanner, longest first within each letter (flex takes
// the longest match). Values are in bytes or microseconds; ms and us are
// doubles (has_dval) as in the scanner.
var exprSuffixes = []struct {
	text string
	i    int64
	d    float64
	hasD bool
	time int // 0: always; 1: only for times; 2: only for sizes
}{
	{"kib", 1000, 1000, false, 0},
	{"mib", 1000000, 1000000, false, 0},
	{"gib", 1000000000, 1000000000, false, 0},
	// fio's scanner gives pib the value of tib (10^12); kept as fio has it.
	{"pib", 1000000000000, 1000000000000, false, 0},
	{"kb", 1 << 10, 1 << 10, false, 0},
	{"mb", 1 << 20, 1 << 20, false, 0},
	{"ms", 1000, 1000, true, 0},
	{"us", 1, 1, true, 0},
	{"gb", 1 << 30, 1 << 30, false, 0},
	{"tb", 1 << 40, 1 << 40, false, 0},
	{"pb", 1 << 50, 1 << 50, false, 0},
	{"k", 1 << 10, 1 << 10, false, 0},
	{"g", 1 << 30, 1 << 30, false, 0},
	{"t", 1 << 40, 1 << 40, false, 0},
	{"p", 1 << 50, 1 << 50, false, 0},
	{"s", 1000000, 1000000, false, 0},
	{"m", 60 * 1000000, 60 * 1000000, false, 1},
	{"m", 1 << 20, 1 << 20, false, 2},
	{"d", 24 * 3600 * 1000000, 24 * 3600 * 1000000, false, 0},
	{"h", 3600 * 1000000, 3600 * 1000000, false, 0},
}

func (l *exprLexer) next() (exprToken, error) {
	for l.pos < len(l.s) && (l.s[l.pos] == ' ' || l.s[l.pos] == '\t') {
		l.pos++
	}
	if l.pos >= len(l.s) {
		return exprToken{kind: tokEOF}, nil
	}
	c := l.s[l.pos]
	switch {
	case c == '#' || c == ':' || c == ',' || c == '\n':
		// fio's scanner drops everything after these.
		l.pos = len(l.s)
		return exprToken{kind: tokEOF}, nil
	case c >= '0' && c <= '9' || c == '.':
		return l.number()
	case strings.IndexByte("+-*/()^%", c) >= 0:
		l.pos++
		return exprToken{kind: tokOp, op: c}, nil
	}
	rest := strings.ToLower(l.s[l.pos:])
	for _, sfx := range exprSuffixes {
		if !strings.HasPrefix(rest, sfx.text) {
			continue
		}
		if sfx.time == 1 && !l.isTime || sfx.time == 2 && l.isTime {
			continue
		}
		l.pos += len(sfx.text)
		return exprToken{kind: tokSuffix, val: exprVal{i: sfx.i, d: sfx.d, hasD: sfx.hasD}}, nil
	}
	return exprToken{}, exprErrorf("unexpected " + strconv.QuoteRune(rune(c)) + " in expression")
}

// number scans an integer, 0x hex integer or decimal number.
func (l *exprLexer) number() (exprToken, error) {
	s := l.s[l.pos:]
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && isHexDigit(s[2]) {
		n := 2
		for n < len(s) && isHexDigit(s[n]) {
			n++
		}
		v, err := strconv.ParseInt(s[2:n], 16, 64)
		if err != nil || v > math.MaxInt32 {
			return exprToken{}, exprErrorf("number " + s[:n] + " too large for fio's expression parser (32 bits)")
		}
		l.pos += n
		return exprToken{kind: tokNum, val: exprVal{i: v, d: float64(v)}}, nil
	}
	// [0-9]*[.][0-9]+ | [0-9]*[.]?[0-9]+[eE][-+]*[0-9]+ | [0-9]+
	i := countDigits(s)
	intPart := i
	isFloat := false
	if i < len(s) && s[i] == '.' {
		j := i + 1 + countDigits(s[i+1:])
		if j > i+1 {
			i = j
			isFloat = true
		}
	}
	if i > 0 && i < len(s) && (s[i] == 'e' || s[i] == 'E') && (intPart > 0 || isFloat) {
		j := i + 1
		for j < len(s) && (s[j] == '-' || s[j] == '+') {
			j++
		}
		if k := countDigits(s[j:]); k > 0 {
			i = j + k
			isFloat = true
		}
	}
	if i == 0 {
		return exprToken{}, exprErrorf("unexpected '.' in expression")
	}
	text := s[:i]
	l.pos += i
	if isFloat {
		// strconv does not take fio's "1e--3"; such input is an error.
		d, err := strconv.ParseFloat(strings.Replace(text, "e+", "e", 1), 64)
		if err != nil || math.IsInf(d, 0) || math.IsNaN(d) {
			return exprToken{}, exprErrorf("bad number " + strconv.Quote(text) + " in expression")
		}
		return exprToken{kind: tokNum, val: exprVal{i: truncInt(d), d: d, hasD: true}}, nil
	}
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil || v > math.MaxInt32 {
		return exprToken{}, exprErrorf("number " + text + " too large for fio's expression parser (32 bits)")
	}
	return exprToken{kind: tokNum, val: exprVal{i: v, d: float64(v)}}, nil
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// truncInt converts d to int64 as C's cast does for values in range, and
// saturates outside it.
func truncInt(d float64) int64 {
	switch {
	case math.IsNaN(d):
		return 0
	case d >= math.MaxInt64:
		return math.MaxInt64
	case d <= math.MinInt64:
		return math.MinInt64
	}
	return int64(d)
}

// exprParser is a precedence-climbing parser with the precedences of fio's
// yacc grammar, lowest first: + - (left), a unit suffix (postfix), * /
// (left), ^ (right), % (left), unary minus.
type exprParser struct {
	lex   exprLexer
	tok   exprToken
	units bool // a unit suffix was used (units_specified)
	depth int
}

const (
	bpAdd    = 10
	bpSuffix = 20
	bpMul    = 30
	bpPow    = 40
	bpMod    = 50
	bpUnary  = 60
	maxDepth = 200
)

func (p *exprParser) advance() error {
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *exprParser) parse(minBP int) (exprVal, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return exprVal{}, exprErrorf("expression nested too deeply")
	}
	var lhs exprVal
	switch {
	case p.tok.kind == tokNum:
		lhs = p.tok.val
		if err := p.advance(); err != nil {
			return exprVal{}, err
		}
	case p.tok.kind == tokOp && p.tok.op == '(':
		if err := p.advance(); err != nil {
			return exprVal{}, err
		}
		v, err := p.parse(0)
		if err != nil {
			return exprVal{}, err
		}
		if p.tok.kind != tokOp || p.tok.op != ')' {
			return exprVal{}, exprErrorf("missing ')' in expression")
		}
		if err := p.advance(); err != nil {
			return exprVal{}, err
		}
		lhs = v
	case p.tok.kind == tokOp && p.tok.op == '-':
		if err := p.advance(); err != nil {
			return exprVal{}, err
		}
		v, err := p.parse(bpUnary)
		if err != nil {
			return exprVal{}, err
		}
		if v.i == math.MinInt64 {
			return exprVal{}, exprErrorf("number too large")
		}
		lhs = exprVal{i: -v.i, d: -v.d, hasD: v.hasD}
	default:
		return exprVal{}, exprErrorf("expected a number in expression")
	}
	for {
		switch {
		case p.tok.kind == tokSuffix:
			if bpSuffix <= minBP {
				return lhs, nil
			}
			s := p.tok.val
			if err := p.advance(); err != nil {
				return exprVal{}, err
			}
			p.units = true
			v := exprVal{hasD: lhs.hasD}
			if !lhs.hasD && !s.hasD {
				n, ok := mulInt(lhs.i, s.i)
				if !ok {
					return exprVal{}, exprErrorf("number too large")
				}
				v.i = n
				v.d = float64(n)
			} else {
				// fio: (long long) $1.dval * $2.dval, the cast binding to
				// the left operand only.
				v.i = truncInt(float64(truncInt(lhs.d)) * s.d)
				v.d = lhs.d * s.d
			}
			lhs = v
		case p.tok.kind == tokOp && strings.IndexByte("+-*/^%", p.tok.op) >= 0:
			op := p.tok.op
			bp, right := opBP(op)
			if bp < minBP || bp == minBP && !right {
				return lhs, nil
			}
			if err := p.advance(); err != nil {
				return exprVal{}, err
			}
			next := bp
			if right {
				next = bp - 1
			}
			rhs, err := p.parse(next)
			if err != nil {
				return exprVal{}, err
			}
			if lhs, err = applyOp(op, lhs, rhs); err != nil {
				return exprVal{}, err
			}
		case p.tok.kind == tokEOF || p.tok.kind == tokOp && p.tok.op == ')':
			return lhs, nil
		default:
			return exprVal{}, exprErrorf("unexpected number in expression")
		}
	}
}

func opBP(op byte) (bp int, right bool) {
	switch op {
	case '+', '-':
		return bpAdd, false
	case '*', '/':
		return bpMul, false
	case '^':
		return bpPow, true
	}
	return bpMod, false
}

func mulInt(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	c := a * b
	if c/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return 0, false
	}
	return c, true
}

func addInt(a, b int64) (int64, bool) {
	c := a + b
	if (c > a) != (b > 0) {
		return 0, false
	}
	return c, true
}

// applyOp is the semantic action of a binary rule of fio's grammar. The
// result keeps the left operand's has_dval, as bison's default $$ = $1
// does.
func applyOp(op byte, a, b exprVal) (exprVal, error) {
	v := exprVal{hasD: a.hasD}
	ints := !a.hasD && !b.hasD
	var ok = true
	switch op {
	case '+':
		if ints {
			v.i, ok = addInt(a.i, b.i)
		} else {
			v.i = truncInt(a.d + b.d)
		}
		v.d = a.d + b.d
	case '-':
		if ints {
			if b.i == math.MinInt64 {
				ok = false
			} else {
				v.i, ok = addInt(a.i, -b.i)
			}
		} else {
			v.i = truncInt(a.d - b.d)
		}
		v.d = a.d - b.d
	case '*':
		if ints {
			v.i, ok = mulInt(a.i, b.i)
		} else {
			v.i = truncInt(a.d * b.d)
		}
		v.d = a.d * b.d
	case '/':
		if b.i == 0 || b.d < 1e-20 && b.d > -1e-20 {
			return exprVal{}, exprErrorf("division by zero in expression")
		}
		if a.i == math.MinInt64 && b.i == -1 {
			return exprVal{}, exprErrorf("number too large")
		}
		v.i = a.i / b.i
		v.d = a.d / b.d
		if a.hasD || b.hasD {
			v.i = truncInt(v.d)
		}
	case '%':
		if a.hasD || b.hasD {
			return exprVal{}, exprErrorf("modulo of a decimal number in expression")
		}
		if b.i == 0 {
			return exprVal{}, exprErrorf("division by zero in expression")
		}
		if b.i == -1 {
			v.i = 0
		} else {
			v.i = a.i % b.i
		}
		v.d = float64(v.i)
	case '^':
		if ints {
			switch {
			case b.i == 0:
				v.i = 1
			case b.i > 0:
				v.i, ok = ipow(a.i, b.i)
			default:
				if a.i == 0 {
					return exprVal{}, exprErrorf("zero to a negative power in expression")
				}
				v.i = truncInt(math.Pow(float64(a.i), float64(b.i)))
			}
			v.d = math.Pow(a.d, b.d)
		} else {
			v.d = math.Pow(a.d, b.d)
			v.i = truncInt(v.d)
		}
	}
	if !ok || math.IsInf(v.d, 0) || math.IsNaN(v.d) {
		return exprVal{}, exprErrorf("number too large")
	}
	return v, nil
}

// evalFioExpr evaluates s, which starts with "(", as fio's
// evaluate_arithmetic_expression does: isTime makes "m" minutes rather than
// MiB and gives times in microseconds; implied multiplies a result given
// without any unit suffix (1e6 for options whose bare numbers are seconds).
// The result is fio's integer result.
func evalFioExpr(s string, isTime bool, implied float64) (int64, error) {
	p := &exprParser{lex: exprLexer{s: s, isTime: isTime}}
	if err := p.advance(); err != nil {
		return 0, err
	}
	v, err := p.parse(0)
	if err != nil {
		return 0, err
	}
	if p.tok.kind != tokEOF {
		return 0, exprErrorf("unexpected ')' in expression")
	}
	n := v.i
	if !p.units {
		// fio: *ival = (int) ((double) *ival * implied_units)
		f := float64(n) * implied
		if f > math.MaxInt32 || f < math.MinInt32 {
			return 0, exprErrorf("result without a unit does not fit fio's 32-bit int; add a unit such as k or s")
		}
		n = int64(f)
	}
	return n, nil
}

// bcEval evaluates s as bc(1) does with scale=0: decimal integers, + - *
// / % ^, unary minus, parentheses; ^ is right-associative and binds less
// tightly than unary minus; division truncates toward zero.
func bcEval(s string) (int64, error) {
	p := &bcParser{s: s}
	v, err := p.expr(0)
	if err != nil {
		return 0, err
	}
	p.skip()
	if p.pos < len(p.s) {
		return 0, exprErrorf("bc: syntax error at " + strconv.Quote(p.s[p.pos:]))
	}
	return v, nil
}

type bcParser struct {
	s     string
	pos   int
	depth int
}

var errBCRange = errors.New("bc: result out of range")

func (p *bcParser) skip() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t') {
		p.pos++
	}
}

func (p *bcParser) peek() byte {
	p.skip()
	if p.pos < len(p.s) {
		return p.s[p.pos]
	}
	return 0
}

func bcBP(op byte) (int, bool) {
	switch op {
	case '+', '-':
		return 10, false
	case '*', '/', '%':
		return 20, false
	case '^':
		return 30, true
	}
	return -1, false
}

func (p *bcParser) expr(minBP int) (int64, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return 0, exprErrorf("bc: expression nested too deeply")
	}
	var lhs int64
	switch c := p.peek(); {
	case c == '(':
		p.pos++
		v, err := p.expr(0)
		if err != nil {
			return 0, err
		}
		if p.peek() != ')' {
			return 0, exprErrorf("bc: missing ')'")
		}
		p.pos++
		lhs = v
	case c == '-':
		p.pos++
		// bc's unary minus binds tighter than ^.
		v, err := p.expr(40)
		if err != nil {
			return 0, err
		}
		if v == math.MinInt64 {
			return 0, errBCRange
		}
		lhs = -v
	case c >= '0' && c <= '9':
		n := countDigits(p.s[p.pos:])
		v, err := strconv.ParseInt(p.s[p.pos:p.pos+n], 10, 64)
		if err != nil {
			return 0, errBCRange
		}
		p.pos += n
		lhs = v
	default:
		return 0, exprErrorf("bc: syntax error at " + strconv.Quote(p.s[p.pos:]))
	}
	for {
		op := p.peek()
		bp, right := bcBP(op)
		if bp < 0 || bp < minBP || bp == minBP && !right {
			return lhs, nil
		}
		p.pos++
		next := bp
		if right {
			next = bp - 1
		}
		rhs, err := p.expr(next)
		if err != nil {
			return 0, err
		}
		ok := true
		switch op {
		case '+':
			lhs, ok = addInt(lhs, rhs)
		case '-':
			if rhs == math.MinInt64 {
				ok = false
			} else {
				lhs, ok = addInt(lhs, -rhs)
			}
		case '*':
			lhs, ok = mulInt(lhs, rhs)
		case '/', '%':
			if rhs == 0 {
				return 0, exprErrorf("bc: divide by zero")
			}
			switch {
			case rhs == -1 && op == '/':
				if lhs == math.MinInt64 {
					ok = false
				} else {
					lhs = -lhs
				}
			case rhs == -1:
				lhs = 0
			case op == '/':
				lhs /= rhs
			default:
				lhs %= rhs
			}
		case '^':
			switch {
			case rhs < 0:
				// 1/(lhs^-rhs) truncated: only 1 and -1 survive.
				switch {
				case lhs == 0:
					return 0, exprErrorf("bc: divide by zero")
				case lhs == 1:
					lhs = 1
				case lhs == -1:
					if rhs%2 != 0 {
						lhs = -1
					} else {
						lhs = 1
					}
				default:
					lhs = 0
				}
			default:
				lhs, ok = ipow(lhs, rhs)
			}
		}
		if !ok {
			return 0, errBCRange
		}
	}
}

// ipow returns a**b for b >= 0, and false if it overflows an int64.
func ipow(a, b int64) (int64, bool) {
	switch a {
	case 0:
		if b == 0 {
			return 1, true
		}
		return 0, true
	case 1:
		return 1, true
	case -1:
		if b%2 == 0 {
			return 1, true
		}
		return -1, true
	}
	r := int64(1)
	for k := int64(0); k < b; k++ {
		var ok bool
		if r, ok = mulInt(r, a); !ok {
			return 0, false
		}
	}
	return r, true
}
