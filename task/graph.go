package task

import (
	"fmt"
	"slices"

	"github.com/tidemark/tidemark/changelog"
	"github.com/tidemark/tidemark/keygroup"
	"github.com/tidemark/tidemark/plan"
	"github.com/tidemark/tidemark/record"
	"github.com/tidemark/tidemark/row"
)

// NodeKind is what a node of the graph computes.
type NodeKind uint8

// The node kinds.
const (
	KindDedup NodeKind = iota // dedup: keyed by event id
	KindOrder                 // order_by: keyed by entity
	KindStage                 // a windowed stage: keyed by its group key
	KindJoin                  // a join stage: keyed by its join key, items of two sides
)

// Node is one keyed step of the graph.
type Node struct {
	Kind NodeKind
	// Stage is the plan stage index of a KindStage node, −1 otherwise.
	Stage int
	// Up is the node that feeds this one, −1 for the runner (the source).
	Up int
	// Ups lists every feeder of the node: Up, and for a join also the
	// runner (−1) when a side reads an input beside the source. A node is
	// an entry (Graph.Entry) when −1 is among them.
	Ups []int
	// Down lists the nodes this one feeds.
	Down []int
	// Depth orders the rows of one firing step across stages: the stage
	// index + 1 (KindStage, KindJoin), 0 otherwise.
	Depth uint8
	// Watermark says how the node's watermark follows the inputs'
	// (docs/semantics.md, "Joins"): the least of input In's watermark −
	// Off over its terms. Nodes of a pipeline without joins follow input
	// 0 (the source) with offset 0.
	Watermark []WMTerm
}

// WMTerm is one term of a node's watermark: input In's watermark − Off ms.
type WMTerm struct {
	In  int
	Off int64
}

// JoinSide names one side of a join stage reading an input.
type JoinSide struct {
	Stage, Side int
}

// Output numbers a pipeline's outputs: the runner maps each to its sinks.
type Output int32

// The pipeline-level outputs; the stages' follow (Graph.ResultsOf,
// LateOf, ContribOf).
const (
	OutQuarantine Output = iota // quarantine.sink
	OutConflicts                // conflicts.sink
	outStages                   // first stage output
)

// Graph is the compiled graph every task of a run shares, read only.
type Graph struct {
	Plan *plan.Plan
	// KeyGroups is the pipeline's number of key groups; Tasks the number of
	// tasks of this run.
	KeyGroups, Tasks int
	Nodes            []Node
	// Entry lists the nodes the runner feeds records to.
	Entry []int
	// StageNode maps a plan stage to its node (−1 for a select stage,
	// which has no state: its rows are made where its input is).
	StageNode []int
	// Roots are the plan stages reading the source, in plan order.
	Roots []int
	// DedupNode and OrderNode are the nodes of those steps, −1 without.
	DedupNode, OrderNode int
	// Canonical marks the stages whose rows feed another stage (their
	// operators emit in the canonical order).
	Canonical []bool
	// Downstream lists, per stage, the stages reading its changelog.
	Downstream [][]int
	// JoinDown lists, per stage, the join sides reading its rows.
	JoinDown [][]JoinSide

	// EventJSON renders a source record as a JSON object (the source's
	// EventJSON); it must be safe for concurrent use.
	EventJSON func(dst []byte, m *record.Meta) []byte
	// InputJSON renders a record of input i ≥ 1 (InputJSON[i]; index 0
	// unused: EventJSON), like EventJSON.
	InputJSON []func(dst []byte, m *record.Meta) []byte
	// JoinSides lists, per input, the join sides reading it.
	JoinSides [][]JoinSide
	// Inputs is the number of inputs (the source and inputs[]).
	Inputs int
	// MultiWM is true when some node's watermark is not simply the
	// source's (several inputs, or a join's hold-back).
	MultiWM bool
	// Lineage is the lineage column's value (a string), or row.Null when
	// the run does not record lineage.
	Lineage row.Value
	// LineageAt, when set (and Lineage is a string), gives each result
	// row its own lineage value instead of Lineage: a run with a versioned
	// reference records the reference version as of the row's time. It
	// must not allocate per row.
	LineageAt func(r *changelog.Row) row.Value
	// HasSinks marks the stages with result sinks; HasLate those with a
	// late side output; HasContrib those with a contributions output;
	// Ledger those with postgres ledger sinks.
	HasSinks, HasLate, HasContrib, Ledger []bool
	// HasQuarantine and HasConflicts say whether those outputs have a sink
	// (records are still counted without).
	HasQuarantine, HasConflicts bool
	// FireChunk is the number of rows a firing emits between two drains
	// (0: DefaultFireChunk).
	FireChunk int
	// Incremental makes the dedup node keep, per key group, what it added
	// since the key group's last section, so that Snapshot can write a
	// delta section instead of the whole key group (set when the run
	// takes checkpoints; it costs about 16 bytes per new id until the
	// next checkpoint).
	Incremental bool
	// keyless is, per stage without a group key, the task owning its one
	// key (the empty key's key group).
	keyless []int
	// feeders are, per node, the nodes feeding it (NodeFeeders).
	feeders [][]int
	// owner maps a key group to its task.
	owner []uint16
}

// ResultsOf is stage s's result rows output.
func ResultsOf(s int) Output { return outStages + Output(3*s) }

// LateOf is stage s's late side output.
func LateOf(s int) Output { return outStages + Output(3*s+1) }

// ContribOf is stage s's contributions output.
func ContribOf(s int) Output { return outStages + Output(3*s+2) }

// Stage is the stage whose output o is (o one of ResultsOf, LateOf or
// ContribOf of it).
func (o Output) Stage() int { return int(o-outStages) / 3 }

// NumOutputs is the number of outputs of a plan with n stages.
func NumOutputs(n int) int { return int(outStages) + 3*n }

// NewGraph builds the graph of p for tasks tasks. Errors: a number of
// tasks out of range.
func NewGraph(p *plan.Plan, tasks int) (*Graph, error) {
	k := p.Spec.EffectiveKeyGroups()
	if tasks < 1 || tasks > k || k > keygroup.Max {
		return nil, fmt.Errorf("%d tasks over %d key groups: want 1 to %d", tasks, k, k)
	}
	g := &Graph{Plan: p, KeyGroups: k, Tasks: tasks, DedupNode: -1, OrderNode: -1, Lineage: row.Null}
	ns := len(p.Stages)
	g.StageNode = make([]int, ns)
	g.Canonical = make([]bool, ns)
	g.Downstream = make([][]int, ns)
	g.JoinDown = make([][]JoinSide, ns)
	g.HasSinks = make([]bool, ns)
	g.HasLate = make([]bool, ns)
	g.HasContrib = make([]bool, ns)
	g.Ledger = make([]bool, ns)
	up := -1
	if p.Dedup != nil {
		g.DedupNode = len(g.Nodes)
		g.Nodes = append(g.Nodes, Node{Kind: KindDedup, Stage: -1, Up: up})
		up = g.DedupNode
	}
	if p.OrderBy != nil {
		g.OrderNode = len(g.Nodes)
		g.Nodes = append(g.Nodes, Node{Kind: KindOrder, Stage: -1, Up: up})
		if up >= 0 {
			g.Nodes[up].Down = append(g.Nodes[up].Down, g.OrderNode)
		}
		up = g.OrderNode
	}
	pre := up // the node feeding the root stages, −1 for the runner
	g.Inputs = p.InputCount()
	g.JoinSides = make([][]JoinSide, g.Inputs)
	src := []WMTerm{{In: 0}}
	for i := range g.Nodes {
		g.Nodes[i].Watermark = src
	}
	for i, st := range p.Stages {
		g.StageNode[i] = -1
		if len(st.Union) > 0 {
			// A union stage has no node: the rows of the stages it unites
			// are its rows, written to its sinks by the runner.
			continue
		}
		if j := st.Join; j != nil {
			n := len(g.Nodes)
			g.StageNode[i] = n
			node := Node{Kind: KindJoin, Stage: i, Up: -1, Depth: uint8(min(i+1, 255))}
			for side, sd := range j.Sides {
				if sd.Stage >= 0 {
					// A side reading an earlier stage's rows: fed by its
					// node, watermarked as its node (plus the hold-back).
					feed := g.StageNode[sd.Stage]
					if feed < 0 {
						return nil, fmt.Errorf("%s: side %d reads stage %s, which has no node", st.Name, side, p.Stages[sd.Stage].Name)
					}
					g.JoinDown[sd.Stage] = append(g.JoinDown[sd.Stage], JoinSide{Stage: i, Side: side})
					g.Canonical[sd.Stage] = true
					if node.Up < 0 {
						node.Up = feed
					}
					if !slices.Contains(node.Ups, feed) {
						node.Ups = append(node.Ups, feed)
						g.Nodes[feed].Down = append(g.Nodes[feed].Down, n)
					}
					for _, t := range g.Nodes[feed].Watermark {
						node.Watermark = addTerm(node.Watermark, WMTerm{In: t.In, Off: t.Off + j.Hold[side]})
					}
					continue
				}
				g.JoinSides[sd.Input] = append(g.JoinSides[sd.Input], JoinSide{Stage: i, Side: side})
				feed := -1
				if sd.Input == 0 {
					feed = pre
				}
				if feed >= 0 {
					node.Up = feed
				}
				if !slices.Contains(node.Ups, feed) {
					node.Ups = append(node.Ups, feed)
					if feed >= 0 {
						g.Nodes[feed].Down = append(g.Nodes[feed].Down, n)
					}
				}
				node.Watermark = addTerm(node.Watermark, WMTerm{In: sd.Input, Off: j.Hold[side]})
			}
			g.Nodes = append(g.Nodes, node)
			continue
		}
		if st.Input >= 0 {
			g.Downstream[st.Input] = append(g.Downstream[st.Input], i)
			g.Canonical[st.Input] = true
		} else {
			g.Roots = append(g.Roots, i)
		}
		if st.Desc.Stateless {
			continue
		}
		feed := pre
		wm := src
		if st.Input >= 0 {
			feed = g.StageNode[st.Input]
			if feed >= 0 {
				wm = g.Nodes[feed].Watermark
			}
		}
		n := len(g.Nodes)
		g.StageNode[i] = n
		g.Nodes = append(g.Nodes, Node{Kind: KindStage, Stage: i, Up: feed, Ups: []int{feed}, Depth: uint8(min(i+1, 255)), Watermark: wm})
		if feed >= 0 {
			g.Nodes[feed].Down = append(g.Nodes[feed].Down, n)
		}
	}
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if n.Ups == nil {
			n.Ups = []int{n.Up}
		}
		if len(n.Watermark) != 1 || n.Watermark[0] != (WMTerm{}) {
			g.MultiWM = true
		}
	}
	g.owner = make([]uint16, k)
	for kg := range g.owner {
		g.owner[kg] = uint16(keygroup.Owner(kg, tasks, k))
	}
	g.keyless = make([]int, ns)
	for i := range g.keyless {
		g.keyless[i] = g.Owner(keygroup.OfKey(nil, k))
	}
	g.feeders = make([][]int, len(g.Nodes))
	for i, n := range g.Nodes {
		if slices.Contains(n.Ups, -1) {
			g.Entry = append(g.Entry, i)
		}
		for _, u := range n.Ups {
			if u >= 0 {
				g.feeders[i] = append(g.feeders[i], u)
			}
		}
	}
	return g, nil
}

// addTerm adds a watermark term, keeping one per input (the largest
// offset: the least watermark).
func addTerm(ts []WMTerm, t WMTerm) []WMTerm {
	for i := range ts {
		if ts[i].In == t.In {
			ts[i].Off = max(ts[i].Off, t.Off)
			return ts
		}
	}
	return append(ts, t)
}

// NodeFeeders returns the nodes (not the runner) feeding node n, in
// Node.Ups order.
func (g *Graph) NodeFeeders(n int) []int { return g.feeders[n] }

// NodeWatermark returns node n's watermark given the inputs' (in[i]):
// the least of in[t.In] − t.Off over its terms (±∞ kept).
func (g *Graph) NodeWatermark(n int, in []int64) int64 {
	w := changelog.WatermarkInfinity
	for _, t := range g.Nodes[n].Watermark {
		v := in[t.In]
		if t.Off != 0 && v != changelog.WatermarkInfinity && v != changelog.WatermarkNone {
			v -= t.Off
		}
		w = min(w, v)
	}
	return w
}

// Owner returns the task owning key group kg.
func (g *Graph) Owner(kg int) int { return int(g.owner[kg]) }

// Range returns the key groups task i owns.
func (g *Graph) Range(i int) keygroup.Range { return keygroup.For(i, g.Tasks, g.KeyGroups) }
