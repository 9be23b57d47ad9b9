package nexmark

import (
	"math/bits"
	"strconv"
)

// urlTable holds the URLs of the channels, built once per source from
// its seed (Flink draws them from unseeded generators at start-up).
type urlTable struct {
	hot      [len(hotChannels)]string
	channels []string // by channel number
}

const nexmarkURL = "https://www.nexmark.com/"

// newURLTable builds the URLs for the seed key: a base URL of three
// random path parts per channel (Flink's BidGenerator.getBaseUrl), with
// "&channel_id=" and the channel number's bits reversed for 9 in 10 of
// the numbered channels (getNextChannelAndurl).
func newURLTable(key int64) *urlTable {
	u := &urlTable{channels: make([]string, numChannels)}
	var buf []byte
	for i := range u.hot {
		rnd := seedJ(key - 1 - int64(i))
		u.hot[i] = string(baseURL(buf[:0], &rnd))
	}
	for i := range u.channels {
		rnd := seedJ(key + int64(i))
		buf = baseURL(buf[:0], &rnd)
		if rnd.nextInt(10) > 0 {
			v := int32(bits.Reverse32(uint32(i)))
			if v < 0 {
				v = -v // Math.abs: MinInt32 stays negative, as in Java
			}
			buf = append(buf, "&channel_id="...)
			buf = strconv.AppendInt(buf, int64(v), 10)
		}
		u.channels[i] = string(buf)
	}
	return u
}

func baseURL(b []byte, rnd *jrand) []byte {
	b = append(b, nexmarkURL...)
	for range 3 {
		b = appendString(b, rnd, 5, '_')
		b = append(b, '/')
	}
	return append(b, "item.htm?query=1"...)
}

func (u *urlTable) channel(i int) string { return u.channels[i] }
