package spec

import (
	"encoding"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/tidemark/tidemark/internal/suggest"
)

// CheckKeys reads the first YAML document of data against the type of v
// (a pointer to the struct it will be decoded into) and returns the first
// of these problems in document order, positioned at the offending key or
// value (yaml.FormatError shows its line):
//
//   - a key that no field of its struct declares: `unknown field "windoe"
//     (did you mean window?)`, or `unknown field "early" in emit (did you
//     mean early_every?)` below the top level, with the keys close to it
//     (package suggest);
//   - a value outside the fixed set of a field tagged
//     `enum:"<noun>|<a>,<b>,…"`: `window.type: unknown window type
//     "tumbing" (want tumbling, sliding, session, cumulate or global; did you mean
//     tumbling?)`;
//   - an explicit zero for a field tagged `zero:"<rule>|<default>"`, whose
//     zero value stands for an absent key (the default): `checkpoint.interval:
//     must be at least 1ms, got 0s (leave the key out for the default,
//     10s)`. A null value (`interval:`) is an absent key.
//
// Anchors, aliases and merge keys (<<) are followed as the decoder follows
// them, so a key written once in an anchored mapping is reported once, at
// the place it is written. Values the decoder reads with its own
// unmarshalers (Duration, NamedExprs, FieldTypes, …) are not looked into.
// A document that does not parse, and values of the wrong shape, are left
// to the decoder: CheckKeys returns nil for them.
func CheckKeys(data []byte, v any) (err error) {
	defer func() {
		if recover() != nil {
			err = nil // the decoder reports what the parser cannot read
		}
	}()
	f, perr := parser.ParseBytes(data, 0)
	if perr != nil || f == nil || len(f.Docs) == 0 || f.Docs[0] == nil || f.Docs[0].Body == nil {
		return nil
	}
	w := &keyWalker{anchors: map[string][]anchorDef{}, seen: map[*token.Token]bool{}, done: map[walked]bool{}}
	w.collect(f.Docs[0].Body, 0)
	for _, defs := range w.anchors {
		sort.SliceStable(defs, func(i, j int) bool { return before(defs[i].tok, defs[j].tok) })
	}
	w.walk(f.Docs[0].Body, reflect.TypeOf(v), "", 0)
	if len(w.issues) == 0 {
		return nil
	}
	first := w.issues[0]
	for _, is := range w.issues[1:] {
		if before(is.tok, first.tok) {
			first = is
		}
	}
	return &yaml.SyntaxError{Message: first.msg, Token: first.tok}
}

// maxKeyDepth bounds the walk (aliases can nest deeply in hostile input).
const maxKeyDepth = 64

type keyWalker struct {
	anchors map[string][]anchorDef // by name, in document order
	issues  []keyIssue
	seen    map[*token.Token]bool // issues already recorded (an anchored key walked twice)
	// done holds the mappings already walked as a struct type: an anchored
	// mapping used through many aliases or merge keys is walked once, so
	// nested aliases cannot make the walk exponential.
	done map[walked]bool
}

type walked struct {
	node ast.Node
	typ  reflect.Type
}

type anchorDef struct {
	tok  *token.Token
	node ast.Node
}

type keyIssue struct {
	tok *token.Token
	msg string
}

// before orders tokens by position in the document.
func before(a, b *token.Token) bool {
	if a.Position.Line != b.Position.Line {
		return a.Position.Line < b.Position.Line
	}
	return a.Position.Column < b.Position.Column
}

func (w *keyWalker) add(tok *token.Token, msg string) {
	if tok == nil || w.seen[tok] {
		return
	}
	w.seen[tok] = true
	w.issues = append(w.issues, keyIssue{tok, msg})
}

// collect records every anchor of the document.
func (w *keyWalker) collect(node ast.Node, depth int) {
	if node == nil || depth > 10*maxKeyDepth {
		return
	}
	switch n := node.(type) {
	case *ast.AnchorNode:
		if n.Name != nil && n.Name.GetToken() != nil && n.GetToken() != nil {
			name := n.Name.GetToken().Value
			w.anchors[name] = append(w.anchors[name], anchorDef{n.GetToken(), n.Value})
		}
		w.collect(n.Value, depth+1)
	case *ast.TagNode:
		w.collect(n.Value, depth+1)
	case *ast.MappingNode:
		for _, v := range n.Values {
			w.collect(v, depth+1)
		}
	case *ast.MappingValueNode:
		w.collect(n.Key, depth+1)
		w.collect(n.Value, depth+1)
	case *ast.MappingKeyNode:
		w.collect(n.Value, depth+1)
	case *ast.SequenceNode:
		for _, v := range n.Values {
			w.collect(v, depth+1)
		}
	}
}

// resolve returns the node under anchors and tags, following aliases to
// the latest anchor of that name defined before them; nil for an alias
// without one.
func (w *keyWalker) resolve(node ast.Node) ast.Node {
	for range maxKeyDepth {
		switch n := node.(type) {
		case *ast.AnchorNode:
			node = n.Value
		case *ast.TagNode:
			node = n.Value
		case *ast.AliasNode:
			if n.Value == nil || n.Value.GetToken() == nil || n.GetToken() == nil {
				return nil
			}
			var target ast.Node
			for _, d := range w.anchors[n.Value.GetToken().Value] {
				if before(d.tok, n.GetToken()) {
					target = d.node
				}
			}
			if target == nil {
				return nil
			}
			node = target
		default:
			return node
		}
	}
	return nil
}

// Types the decoder reads with their own unmarshalers: not looked into.
var (
	nodeUnmarshaler      = reflect.TypeFor[yaml.NodeUnmarshaler]()
	nodeUnmarshalerCtx   = reflect.TypeFor[yaml.NodeUnmarshalerContext]()
	bytesUnmarshaler     = reflect.TypeFor[yaml.BytesUnmarshaler]()
	bytesUnmarshalerCtx  = reflect.TypeFor[yaml.BytesUnmarshalerContext]()
	ifaceUnmarshaler     = reflect.TypeFor[yaml.InterfaceUnmarshaler]()
	ifaceUnmarshalerCtx  = reflect.TypeFor[yaml.InterfaceUnmarshalerContext]()
	textUnmarshaler      = reflect.TypeFor[encoding.TextUnmarshaler]()
	timeType, durationTy = reflect.TypeFor[time.Time](), reflect.TypeFor[time.Duration]()
)

func ownUnmarshaler(t reflect.Type) bool {
	if t == timeType || t == durationTy {
		return true
	}
	pt := reflect.PointerTo(t)
	for _, i := range []reflect.Type{nodeUnmarshaler, nodeUnmarshalerCtx, bytesUnmarshaler, bytesUnmarshalerCtx, ifaceUnmarshaler, ifaceUnmarshalerCtx, textUnmarshaler} {
		if t.Implements(i) || pt.Implements(i) {
			return true
		}
	}
	return false
}

func (w *keyWalker) walk(node ast.Node, t reflect.Type, path string, depth int) {
	if t == nil || depth > maxKeyDepth {
		return
	}
	node = w.resolve(node)
	if node == nil {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if ownUnmarshaler(t) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		w.walkStruct(node, t, path, depth)
	case reflect.Slice, reflect.Array:
		if seq, ok := node.(*ast.SequenceNode); ok {
			for i, el := range seq.Values {
				w.walk(el, t.Elem(), fmt.Sprintf("%s[%d]", path, i), depth+1)
			}
		}
	case reflect.Map:
		for _, e := range mappingEntries(node) {
			if k, ok := keyText(e); ok {
				w.walk(e.Value, t.Elem(), joinKey(path, k), depth+1)
			}
		}
	}
}

// mappingEntries returns the entries of a mapping node, none for another
// node.
func mappingEntries(node ast.Node) []*ast.MappingValueNode {
	switch n := node.(type) {
	case *ast.MappingNode:
		return n.Values
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{n}
	}
	return nil
}

// keyText returns the text of an entry's key ("? key" included).
func keyText(e *ast.MappingValueNode) (string, bool) {
	if e == nil || e.Key == nil {
		return "", false
	}
	var k ast.Node = e.Key
	if mk, ok := k.(*ast.MappingKeyNode); ok {
		k = mk.Value
	}
	return ScalarText(k)
}

func joinKey(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// structKey is one YAML key of a struct.
type structKey struct {
	typ  reflect.Type
	tag  reflect.StructTag
	name string
}

// structKeys returns the YAML keys of struct t in field order, as the
// decoder names them (the yaml tag's name, else the lower-cased field
// name; inline structs contribute their keys).
func structKeys(t reflect.Type) []structKey {
	var out []structKey
	for i := range t.NumField() {
		f := t.Field(i)
		if f.PkgPath != "" && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "" {
			tag = f.Tag.Get("json")
		}
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",inline,") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, structKeys(ft)...)
				continue
			}
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out = append(out, structKey{f.Type, f.Tag, name})
	}
	return out
}

func (w *keyWalker) walkStruct(node ast.Node, t reflect.Type, path string, depth int) {
	if node == nil || w.done[walked{node, t}] {
		return
	}
	w.done[walked{node, t}] = true
	keys := structKeys(t)
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.name
	}
	for _, e := range mappingEntries(node) {
		if e.Key != nil && e.Key.IsMergeKey() {
			w.walkMerge(e.Value, t, path, depth+1)
			continue
		}
		k, ok := keyText(e)
		if !ok {
			continue
		}
		i := -1
		for j := range keys {
			if keys[j].name == k {
				i = j
				break
			}
		}
		if i < 0 {
			in := ""
			if path != "" {
				in = " in " + path
			}
			w.add(e.Key.GetToken(), fmt.Sprintf("unknown field %q%s%s", k, in, suggest.Hint(k, names)))
			continue
		}
		key := joinKey(path, k)
		w.checkValue(e.Value, keys[i], key)
		w.walk(e.Value, keys[i].typ, key, depth+1)
	}
}

// walkMerge walks the mappings a merge key (<<) brings into a struct: an
// alias, a mapping, or a list of them.
func (w *keyWalker) walkMerge(value ast.Node, t reflect.Type, path string, depth int) {
	if depth > maxKeyDepth {
		return
	}
	v := w.resolve(value)
	if seq, ok := v.(*ast.SequenceNode); ok {
		for _, el := range seq.Values {
			w.walkStruct(w.resolve(el), t, path, depth+1)
		}
		return
	}
	w.walkStruct(v, t, path, depth+1)
}

// checkValue applies a field's enum and zero tags to its scalar value.
func (w *keyWalker) checkValue(value ast.Node, k structKey, key string) {
	v := w.resolve(value)
	if v == nil {
		return
	}
	if _, null := v.(*ast.NullNode); null {
		return
	}
	text, ok := ScalarText(v)
	if !ok {
		return
	}
	if enum := k.tag.Get("enum"); enum != "" {
		noun, list, _ := strings.Cut(enum, "|")
		allowed := strings.Split(list, ",")
		if text != "" && !contains(allowed, text) {
			hint := suggest.Phrase(suggest.Close(text, allowed))
			if hint != "" {
				hint = "; " + hint
			}
			w.add(v.GetToken(), fmt.Sprintf("%s: unknown %s %q (want %s%s)", key, noun, text, suggest.List(allowed, "or"), hint))
		}
	}
	if zero := k.tag.Get("zero"); zero != "" {
		rule, def, _ := strings.Cut(zero, "|")
		if isZeroText(k.typ, text) {
			w.add(v.GetToken(), fmt.Sprintf("%s: %s, got %s (leave the key out for the default, %s)", key, rule, text, def))
		}
	}
}

// isZeroText reports whether text is the zero value of a Duration or an
// integer field.
func isZeroText(t reflect.Type, text string) bool {
	text = strings.TrimSpace(text)
	if t == reflect.TypeFor[Duration]() {
		d, err := time.ParseDuration(text)
		return err == nil && d == 0
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(text, 0, 64)
		return err == nil && n == 0
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
