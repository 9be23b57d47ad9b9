package format

import "strconv"

// valueAt returns the offset in line, a valid JSON text, of the value
// that fastjson's Get(path...) finds there: at each level the first
// member of an object with that name (keys compared with their escapes
// decoded), or the element of an array at that index. It is used only to
// place errors, so it favours plainness over speed.
func valueAt(line []byte, path []string) (int, bool) {
	i := skipWS(line, 0)
	for _, seg := range path {
		if i >= len(line) {
			return 0, false
		}
		var ok bool
		switch line[i] {
		case '{':
			i, ok = memberAt(line, i, seg)
		case '[':
			i, ok = elementAt(line, i, seg)
		}
		if !ok {
			return 0, false
		}
	}
	return i, true
}

// memberAt returns the offset of the value of the first member named name
// of the object at b[i].
func memberAt(b []byte, i int, name string) (int, bool) {
	i = skipWS(b, i+1)
	var key []byte
	for i < len(b) && b[i] == '"' {
		end, esc, ok := scanString(b, i+1)
		if !ok {
			return 0, false
		}
		k := b[i+1 : end]
		if esc {
			key = appendUnescaped(key[:0], k)
			k = key
		}
		j := skipWS(b, end+1)
		if j >= len(b) || b[j] != ':' {
			return 0, false
		}
		j = skipWS(b, j+1)
		if string(k) == name {
			return j, true
		}
		next, ok := skipValue(b, j)
		if !ok {
			return 0, false
		}
		j = skipWS(b, next)
		if j >= len(b) || b[j] != ',' {
			return 0, false
		}
		i = skipWS(b, j+1)
	}
	return 0, false
}

// elementAt returns the offset of element seg (a decimal index) of the
// array at b[i].
func elementAt(b []byte, i int, seg string) (int, bool) {
	n, err := strconv.Atoi(seg)
	if err != nil || n < 0 {
		return 0, false
	}
	i = skipWS(b, i+1)
	for k := 0; i < len(b) && b[i] != ']'; k++ {
		if k == n {
			return i, true
		}
		next, ok := skipValue(b, i)
		if !ok {
			return 0, false
		}
		j := skipWS(b, next)
		if j >= len(b) || b[j] != ',' {
			return 0, false
		}
		i = skipWS(b, j+1)
	}
	return 0, false
}
