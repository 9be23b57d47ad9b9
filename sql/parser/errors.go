package parser

import (
	"errors"
	"fmt"
	"strings"
)

// Error is a problem at a position of a script: a syntax error from Parse,
// or a planning error about a construct (the planner makes them with
// Source.Errorf). Error() renders it as
//
//	job.sql:3:17: unknown column `prce` (did you mean price?)
//	    3 | SELECT auction, prce FROM bid
//	      |                 ^
type Error struct {
	// File names the script ("" for none); Pos is where the problem is.
	File string
	Pos  Pos
	// Msg is the message without the position.
	Msg string
	// Line is the text of the line holding Pos, without its line break.
	Line string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	fmt.Fprintf(&b, "%d:%d: %s", e.Pos.Line, e.Pos.Col, e.Msg)
	if e.Line != "" || e.Pos.Line > 0 {
		num := fmt.Sprint(e.Pos.Line)
		pad := strings.Repeat(" ", len(num))
		fmt.Fprintf(&b, "\n  %s | %s\n  %s | %s^", num, e.Line, pad, caretPad(e.Line, e.Pos.Col))
	}
	return b.String()
}

// caretPad is the white space before a caret under rune column col of
// line: tabs kept as tabs so that it lines up in a terminal.
func caretPad(line string, col int) string {
	var b strings.Builder
	i := 1
	for _, r := range line {
		if i >= col {
			break
		}
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
		i++
	}
	for ; i < col; i++ {
		b.WriteByte(' ')
	}
	return b.String()
}

// newError makes an Error at p in src (lines: lineStarts(src)).
func newError(file, src string, lines []int, p Pos, msg string) *Error {
	return &Error{File: file, Pos: p, Msg: msg, Line: lineText(src, lines, p.Line)}
}

// lineText returns line n (1-based) of src without its line break.
func lineText(src string, lines []int, n int) string {
	if n < 1 || n > len(lines) {
		return ""
	}
	start := lines[n-1]
	end := len(src)
	if n < len(lines) {
		end = lines[n] - 1
	}
	return strings.TrimRight(src[start:end], "\r")
}

// plainMessage returns an error's message without its position and line
// (the Msg of an *Error).
func plainMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Msg
	}
	return err.Error()
}

// Source is a script's text and name, for the errors of later passes
// (the planner) at positions of its syntax tree.
type Source struct {
	File  string
	Text  string
	lines []int
}

// NewSource returns the Source of a script's text.
func NewSource(file, text string) *Source {
	return &Source{File: file, Text: text, lines: lineStarts(text)}
}

// Errorf returns an *Error at p.
func (s *Source) Errorf(p Pos, format string, args ...any) *Error {
	return newError(s.File, s.Text, s.lines, p, fmt.Sprintf(format, args...))
}
