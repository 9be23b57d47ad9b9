package nexmark

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/row"
	"github.com/tidemark/tidemark/source"
)

// beamEvents are events of Beam's Generator at firstEventRate 10,000
// (inter-event delay 100 µs): the generator as in
// sdks/java/testing/nexmark (Generator.nextEvent with firstEventId and
// firstEventNumber 0, base time 2015-07-15T00:00:00Z, the Person,
// Auction and Bid generators with NexmarkConfiguration's defaults), run
// on OpenJDK 17 and printed as beamLine prints them.
var beamEvents = map[int64]string{
	0:         "P 1000 \"Peter Jones\" \"nhd@xcat.com\" \"7241 7320 9143 4888\" \"Portland\" \"WY\" 1436918400000 \"WN_HS_bnpkkiwhwana_L^`KZjdgsid`K]MLU[aaOH`ztxbulvlxtkn_ZZ^T\\\\mqgdjzvlkymsmfrhkfVYSXK_OY[aVYVKa\\\\X^]RO]OYguwiduWJNQLLaMLHOTaHY_J[YKWaUOSJN_VHWXZ]`SgbnjqeVVQ\\\\[[\"",
	1:         "A 1000 \"wkx mgee\" \"eszpqxtdxrvwmmywkmogoahf\" 28873 29448 1436918400000 1436918400011 1000 13 \"zcurskufssowmihzpmZHWQM^fnleramznyyqimoheaRSWV^OjtfjhgXRa`[PVHUOMTbrqqzjyztfwnhstxbu]\\\\V_XPldnjuo^^PJQMnwhlsenoniir^aNZI__IP[QLYPROSNW]HYP\\\\L]W^PTkfnbtwuqucwreikflftlgtebaurwml^RMRIPqevmpqsnxmcblfvpfeajfopsHS^U[Jzxwajo_W`RXa[XWI[`VXZOR^lghgmwHITMP[dbwdgtPQJYHLjnubcsjgszqvyzeoeqjcbaazmrqamxoxgrjh`L`]_Y^OQM]ItjxtuwZJS[RTmrkpofsnuysxuvwbuzrqkrkkqpiz\"",
	2:         "A 1001 \"z ck w\" \"cwlachrnkfzkygsu edjytotggvasbt z yjjszhhsqtrgzblkaolzkhlldqedvgj fdbvswemnzshmwipqrzqfkd\" 25626290 28805847 1436918400000 1436918400202 1000 12 \"jzlkehMZPLIIwtopffS\\\\KHLRhdduqtifpeko`KO`ZQK[[_I`H[aTINQKQJMPTYYLOYitqbesrjqlgtpwxmaisefjioILP`OSWQSKaY_LZV]MSPTILLgyacoodbfiyyWWK_NKetfdja`HUNP^uwfvxlyvywsaL^KN\\\\[myznhx^O_JRShcfzvf]O`NJ\\\\ctudjuorfgrhhpmxquKXXQLPbirsklX[aY\\\\YUJ[WR\\\\L_SXW_YHM\\\\HPwvmlopNNVJVWlmtrikTIUaUaZO]^XTIYK`R]iobqufV`PSJ_wfivocSWSaTUaWU_[^kohfsnQSTVVaI\"",
	4:         "B 1000 1001 32530001 1436918400000 \"fdiysaV^]NLVsbolvyqwgticfdrwdyiyofziYMU\\\\Z`UaTQO][NX\\\\RM]WPYTOuwogvszlxjrcNOORM\"",
	5:         "B 1000 1009 468715 1436918400000 \"kpbrykRZJVMWeuyfegsyumoyP[P_Z\\\\XIMVVVxctqkwvurozuRWZ`MYaYVW][cjupgbckseelPM`\"",
	49:        "B 1000 1001 545 1436918400004 \"_S\\\\XKSaJKYT_zxptuoLI`ZXTR^V`SKNKP\\\\[]JK_OJ\\\\hgjhnbL^LKRYjiuaqbaI\\\\JS[\"",
	50:        "P 1001 \"Sarah Smith\" \"f  y@yumv.com\" \"0892 2755 1923 0591\" \"Los Angeles\" \"ID\" 1436918400005 \"`RT]WInnxtneWPLPHOywusizasixbmVVHKO_Y_MOYPmoftdguqtxkyXPO_ZNYMaKVQ\\\\``OOXTNOWIKUOLIaWQN\\\\H[_cihasyNLOMHLVHKVRIznfdmdeqqvumRMZYKKNRJ[K^IIN`RJM`H[^^vbqrxduih\"",
	123456:    "B 8332 3401 66082 1436918412345 \"POQXW_nwadugodvfoaSa\\\\_LRZHMXOVhvhnvecibhhsjimpcbT\\\\aNXQnjxxfmaaM]YVpdf\"",
	5000001:   "A 301000 \"jvoksahx luq\" \"wady lfwlfpqaeepmjtbbdrtjrkztgb fbiyya\" 16605526 16619963 1436918900000 1436918900075 100869 11 \"xwmhlnmltlqztfvwehMR`QLaL[H_JJ__MYIZaW^]THqjkrspulevzgedcqknVON]\\\\\\\\ofgbqunxkuqisuaybmKUROIMUMKaTP]ZH^^IgtyfmsORSRSHNPMIU\\\\I]VNQZLII_VHrzdlci\\\\NXJK[brlwmjteibxmlibsfrqyocxzsfkluhoxjzqvgabnssYSLV^J_]X[ZSQ_WYHMU\\\\[IOKusgcrkZQPZMQhzlqtwOYNLRQeycjqgkbbjphWQSTW\\\\LRL]^N\\\\XSXK\\\\XYOPUIprdhjpTW[YX_JI^TRIL`KOKUQV`RIWgndpacHYNRHVdhdggfXSTH_`OSLaZVboyaebS]KJVNSRMJ^Kgmvxql`OIT\\\\NmkrpvsQWKQINrqfocsMIWNOYmekrrd\"",
	987654321: "B 59260227 19754001 1513 1437017165432 \"VRH`X_prxwjpgrphndllvena\\\\L]K[Tgcyllyxewmag_aUaO_dpofzntpfdinWJ^\"",
}

// beamHash is the hash, as the loop in TestBeamEvents computes it, of the
// first 200,000 events of that run.
const beamHash = 2575357788225681859

// beamLine prints an event as the Java program did: the type letter, then
// Beam's fields in Beam's order, strings quoted with \ and " escaped.
func beamLine(s *row.Schema, r *row.Row, id int64) string {
	q := func(name string) string {
		f, _ := s.Lookup(name)
		v := r.Get(f).S
		return `"` + strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), `"`, `\"`) + `"`
	}
	n := func(name string) int64 {
		f, _ := s.Lookup(name)
		return r.Get(f).I
	}
	switch kindOfID(id) {
	case EventPerson:
		return fmt.Sprintf("P %d %s %s %s %s %s %d %s", n("person.id"), q("person.name"), q("person.email_address"),
			q("person.credit_card"), q("person.city"), q("person.state"), n("person.date_time"), q("person.extra"))
	case EventAuction:
		return fmt.Sprintf("A %d %s %s %d %d %d %d %d %d %s", n("auction.id"), q("auction.item_name"), q("auction.description"),
			n("auction.initial_bid"), n("auction.reserve"), n("auction.date_time"), n("auction.expires"),
			n("auction.seller"), n("auction.category"), q("auction.extra"))
	}
	return fmt.Sprintf("B %d %d %d %d %s", n("bid.auction"), n("bid.bidder"), n("bid.price"), n("bid.date_time"), q("bid.extra"))
}

// javaHash is Java's String.hashCode of an ASCII string.
func javaHash(s string) int32 {
	var h int32
	for i := 0; i < len(s); i++ {
		h = 31*h + int32(s[i])
	}
	return h
}

// TestBeamEvents: with Seed 0 every Beam field equals Beam's generator,
// event for event.
func TestBeamEvents(t *testing.T) {
	src, _ := newSource(t, Config{Rate: 10_000})
	for id, want := range beamEvents {
		r, s := event(src, id)
		if got := beamLine(s, r, id); got != want {
			t.Errorf("event %d:\n got %s\nwant %s", id, got, want)
		}
	}
	if testing.Short() {
		return
	}
	n := int64(200_000)
	var h int64
	all, _ := NewSchema()
	p, _ := newPlan(all, nil)
	g := &gen{p: p, clk: src.g.clk, arena: new(source.Arena)}
	r := all.NewRow()
	for id := range n {
		all.Shape(r)
		g.arena.Reset()
		g.fill(r, id, g.clk.at(id))
		h = h*1000003 + int64(javaHash(beamLine(all, r, id)))
	}
	if h != beamHash {
		t.Errorf("hash of the first %d events %d, Beam's %d", n, h, beamHash)
	}
}
