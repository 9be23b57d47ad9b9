package parser

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Pos is a position in a script: the byte offset, and the line and column
// (1-based; the column counts runes, so a caret lines up under it).
type Pos struct {
	Offset, Line, Col int
}

// String renders the position as line:column.
func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// TokenKind is the kind of a token.
type TokenKind uint8

// The token kinds.
const (
	TokEOF     TokenKind = iota
	TokIdent             // an unquoted identifier or keyword (Text as written)
	TokQIdent            // a backquoted identifier (Text unquoted, `` as `)
	TokString            // a string literal (Text unquoted, '' as ')
	TokNumber            // an integer or decimal literal (Text as written)
	TokOp                // punctuation and operators: ( ) , . ; = <> != < <= > >= + - * / % || [ ] => :
	TokHint              // a /*+ … */ hint (Text the inside)
	TokInvalid           // a character no token starts with (Text the character)
)

func (k TokenKind) String() string {
	switch k {
	case TokEOF:
		return "end of input"
	case TokIdent:
		return "identifier"
	case TokQIdent:
		return "quoted identifier"
	case TokString:
		return "string"
	case TokNumber:
		return "number"
	case TokOp:
		return "operator"
	case TokHint:
		return "hint"
	}
	return "invalid character"
}

// Token is one lexical token with its position.
type Token struct {
	Kind TokenKind
	Text string
	Pos  Pos
	// End is the position just after the token (in the source as
	// written: for a token from a ${…} placeholder, the placeholder's end).
	End Pos
}

// describe renders a token for messages: `FROM`, 'text', end of input.
func (t Token) describe() string {
	switch t.Kind {
	case TokEOF:
		return "end of input"
	case TokString:
		return "'" + strings.ReplaceAll(t.Text, "'", "''") + "'"
	case TokQIdent:
		return "`" + t.Text + "`"
	case TokHint:
		return "hint /*+" + t.Text + "*/"
	}
	return "`" + t.Text + "`"
}

// lexer splits a script into tokens. Placeholders ${NAME} and
// ${NAME:-default} are replaced as they are read: inside a string literal
// in its value, elsewhere by the tokens of their value, each placed at the
// placeholder (so a message points into the script as written).
type lexer struct {
	file   string
	src    string
	lines  []int // byte offset of the start of each line
	off    int
	line   int
	col    int
	lookup func(string) (string, bool)
	toks   []Token
}

// tokenize returns every token of src, ending with EOF, or the first error.
func tokenize(file, src string, lookup func(string) (string, bool)) ([]Token, []int, error) {
	lx := &lexer{file: file, src: src, line: 1, col: 1, lookup: lookup}
	lx.lines = lineStarts(src)
	// A token per 6 bytes of source, about: the Nexmark files with their
	// comments have one per 5 to 12 (7.5 for q19's script), so the slice
	// is allocated once or twice instead of growing from empty.
	lx.toks = make([]Token, 0, len(src)/6+8)
	for {
		t, err := lx.next()
		if err != nil {
			return nil, lx.lines, err
		}
		if t.Kind == TokEOF {
			lx.toks = append(lx.toks, t)
			return lx.toks, lx.lines, nil
		}
		if t.Kind == placeholderKind {
			if err := lx.expand(t); err != nil {
				return nil, lx.lines, err
			}
			continue
		}
		lx.toks = append(lx.toks, t)
	}
}

// placeholderKind marks a ${…} placeholder outside a string (internal).
const placeholderKind TokenKind = 255

func lineStarts(src string) []int {
	starts := []int{0}
	for i := 0; i < len(src); i++ {
		if src[i] == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

func (lx *lexer) pos() Pos { return Pos{Offset: lx.off, Line: lx.line, Col: lx.col} }

func (lx *lexer) errAt(p Pos, format string, args ...any) error {
	return newError(lx.file, lx.src, lx.lines, p, fmt.Sprintf(format, args...))
}

// peek returns the rune at the current offset (utf8.RuneError at the end
// or for an invalid byte, with width 1 for the latter).
func (lx *lexer) peek() (rune, int) {
	if lx.off >= len(lx.src) {
		return -1, 0
	}
	r, w := utf8.DecodeRuneInString(lx.src[lx.off:])
	return r, w
}

func (lx *lexer) peekAt(n int) byte {
	if lx.off+n < len(lx.src) {
		return lx.src[lx.off+n]
	}
	return 0
}

// advance moves past one rune.
func (lx *lexer) advance() {
	r, w := lx.peek()
	if w == 0 {
		return
	}
	lx.off += w
	if r == '\n' {
		lx.line++
		lx.col = 1
	} else {
		lx.col++
	}
}

func (lx *lexer) next() (Token, error) {
	if err := lx.skipSpace(); err != nil {
		return Token{}, err
	}
	start := lx.pos()
	r, _ := lx.peek()
	tok := func(k TokenKind, text string) (Token, error) {
		return Token{Kind: k, Text: text, Pos: start, End: lx.pos()}, nil
	}
	switch {
	case r < 0:
		return tok(TokEOF, "")
	case r == '$' && lx.peekAt(1) == '{':
		name, def, hasDef, err := lx.placeholder()
		if err != nil {
			return Token{}, err
		}
		t := Token{Kind: placeholderKind, Text: name, Pos: start, End: lx.pos()}
		if hasDef {
			t.Text = name + ":-" + def
		}
		return t, nil
	case r == '_' || unicode.IsLetter(r):
		for {
			c, _ := lx.peek()
			if c == '_' || c == '$' || unicode.IsLetter(c) || unicode.IsDigit(c) {
				lx.advance()
				continue
			}
			break
		}
		return tok(TokIdent, lx.src[start.Offset:lx.off])
	case r == '`':
		lx.advance()
		var b strings.Builder
		for {
			c, w := lx.peek()
			switch {
			case c < 0:
				return Token{}, lx.errAt(start, "unterminated quoted identifier: a ` opens it here and none closes it")
			case c == '`' && lx.peekAt(1) == '`':
				b.WriteByte('`')
				lx.advance()
				lx.advance()
				continue
			case c == '`':
				lx.advance()
				if b.Len() == 0 {
					return Token{}, lx.errAt(start, "empty quoted identifier ``")
				}
				return tok(TokQIdent, b.String())
			case c == '\n':
				return Token{}, lx.errAt(start, "unterminated quoted identifier: a ` opens it here and the line ends before one closes it")
			}
			if c == utf8.RuneError && w == 1 {
				return Token{}, lx.errAt(lx.pos(), "invalid UTF-8 byte in a quoted identifier")
			}
			b.WriteString(lx.src[lx.off : lx.off+w])
			lx.advance()
		}
	case r == '\'':
		s, err := lx.stringLit()
		if err != nil {
			return Token{}, err
		}
		return tok(TokString, s)
	case r >= '0' && r <= '9' || r == '.' && isDigit(lx.peekAt(1)):
		return lx.number(start)
	}
	two := ""
	if lx.off+2 <= len(lx.src) {
		two = lx.src[lx.off : lx.off+2]
	}
	switch two {
	case "<>", "!=", "<=", ">=", "||", "=>":
		lx.advance()
		lx.advance()
		return tok(TokOp, two)
	}
	switch r {
	case '(', ')', ',', '.', ';', '=', '<', '>', '+', '-', '*', '/', '%', '[', ']', ':':
		lx.advance()
		return tok(TokOp, string(r))
	}
	lx.advance()
	if r == utf8.RuneError {
		return Token{}, lx.errAt(start, "invalid UTF-8 byte")
	}
	return Token{}, lx.errAt(start, "unexpected character %q", r)
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

// number lexes an integer or decimal literal: digits, an optional point
// and digits, an optional exponent.
func (lx *lexer) number(start Pos) (Token, error) {
	for isDigit(lx.peekAt(0)) {
		lx.advance()
	}
	if lx.peekAt(0) == '.' && isDigit(lx.peekAt(1)) {
		lx.advance()
		for isDigit(lx.peekAt(0)) {
			lx.advance()
		}
	}
	if c := lx.peekAt(0); c == 'e' || c == 'E' {
		n := 1
		if s := lx.peekAt(1); s == '+' || s == '-' {
			n = 2
		}
		if isDigit(lx.peekAt(n)) {
			for i := 0; i < n; i++ {
				lx.advance()
			}
			for isDigit(lx.peekAt(0)) {
				lx.advance()
			}
		}
	}
	if r, _ := lx.peek(); r == '_' || unicode.IsLetter(r) {
		p := lx.pos()
		return Token{}, lx.errAt(p, "a number runs into %q: put a space between them", r)
	}
	return Token{Kind: TokNumber, Text: lx.src[start.Offset:lx.off], Pos: start, End: lx.pos()}, nil
}

// stringLit lexes a '…' literal (” is a quote), expanding placeholders.
func (lx *lexer) stringLit() (string, error) {
	start := lx.pos()
	lx.advance()
	var b strings.Builder
	for {
		c, w := lx.peek()
		switch {
		case c < 0:
			return "", lx.errAt(start, "unterminated string: a ' opens it here and none closes it")
		case c == '\'' && lx.peekAt(1) == '\'':
			b.WriteByte('\'')
			lx.advance()
			lx.advance()
			continue
		case c == '\'':
			lx.advance()
			return b.String(), nil
		case c == '$' && lx.peekAt(1) == '{':
			at := lx.pos()
			name, def, hasDef, err := lx.placeholder()
			if err != nil {
				return "", err
			}
			v, err := lx.value(at, name, def, hasDef)
			if err != nil {
				return "", err
			}
			b.WriteString(v)
			continue
		case c == utf8.RuneError && w == 1:
			return "", lx.errAt(lx.pos(), "invalid UTF-8 byte in a string")
		}
		b.WriteString(lx.src[lx.off : lx.off+w])
		lx.advance()
	}
}

// placeholder reads ${NAME} or ${NAME:-default} at the current offset.
func (lx *lexer) placeholder() (name, def string, hasDef bool, err error) {
	start := lx.pos()
	end := strings.IndexByte(lx.src[lx.off:], '}')
	nl := strings.IndexByte(lx.src[lx.off:], '\n')
	if end < 0 || nl >= 0 && nl < end {
		return "", "", false, lx.errAt(start, "unterminated placeholder: ${ without a closing } on its line")
	}
	body := lx.src[lx.off+2 : lx.off+end]
	name, def, hasDef = strings.Cut(body, ":-")
	if !validVarName(name) {
		return "", "", false, lx.errAt(start, "placeholder ${%s}: a name is letters, digits and _ (not starting with a digit), optionally followed by :-default", body)
	}
	for lx.off < start.Offset+end+1 {
		lx.advance()
	}
	return name, def, hasDef, nil
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// value returns a placeholder's value: the variable, or the default when
// it is unset or empty; an error naming it when unset without a default.
func (lx *lexer) value(at Pos, name, def string, hasDef bool) (string, error) {
	if lx.lookup != nil {
		if v, ok := lx.lookup(name); ok && v != "" {
			return v, nil
		}
	}
	if hasDef {
		return def, nil
	}
	return "", lx.errAt(at, "placeholder ${%s} is not set: set the environment variable %s, or write ${%s:-default}", name, name, name)
}

// expand replaces a placeholder outside a string by its value's tokens,
// each at the placeholder's position.
func (lx *lexer) expand(t Token) error {
	name, def, hasDef := strings.Cut(t.Text, ":-")
	v, err := lx.value(t.Pos, name, def, hasDef)
	if err != nil {
		return err
	}
	sub := &lexer{file: lx.file, src: v, line: 1, col: 1}
	sub.lines = lineStarts(v)
	for {
		st, err := sub.next()
		if err != nil {
			return lx.errAt(t.Pos, "placeholder ${%s} = %q: %v", name, v, plainMessage(err))
		}
		if st.Kind == TokEOF {
			return nil
		}
		if st.Kind == placeholderKind {
			return lx.errAt(t.Pos, "placeholder ${%s} = %q holds another placeholder", name, v)
		}
		st.Pos, st.End = t.Pos, t.End
		lx.toks = append(lx.toks, st)
	}
}

// skipSpace skips white space and comments (-- to the end of the line,
// /* … */); a /*+ … */ hint is a token and is left for next.
func (lx *lexer) skipSpace() error {
	for {
		r, _ := lx.peek()
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\ufeff':
			lx.advance()
		case r == '-' && lx.peekAt(1) == '-':
			for {
				c, _ := lx.peek()
				if c < 0 || c == '\n' {
					break
				}
				lx.advance()
			}
		case r == '/' && lx.peekAt(1) == '*':
			if lx.peekAt(2) == '+' {
				return lx.hint()
			}
			start := lx.pos()
			lx.advance()
			lx.advance()
			for {
				c, _ := lx.peek()
				if c < 0 {
					return lx.errAt(start, "unterminated comment: /* opens it here and no */ closes it")
				}
				if c == '*' && lx.peekAt(1) == '/' {
					lx.advance()
					lx.advance()
					break
				}
				lx.advance()
			}
		default:
			return nil
		}
	}
}

// hint lexes a /*+ … */ hint as a Hint token appended directly.
func (lx *lexer) hint() error {
	start := lx.pos()
	end := strings.Index(lx.src[lx.off+3:], "*/")
	if end < 0 {
		return lx.errAt(start, "unterminated hint: /*+ opens it here and no */ closes it")
	}
	text := lx.src[lx.off+3 : lx.off+3+end]
	for lx.off < start.Offset+3+end+2 {
		lx.advance()
	}
	lx.toks = append(lx.toks, Token{Kind: TokHint, Text: text, Pos: start, End: lx.pos()})
	return lx.skipSpace()
}
