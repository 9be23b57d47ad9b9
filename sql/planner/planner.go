// Package planner compiles a SQL script (package sql/parser) onto the same
// pipeline spec a YAML file decodes into, so that the SQL and the YAML
// form of a job compile (plan.Compile) to the same plan, run on the same
// engine, take the same checkpoints and print the same plan fingerprint.
// It is a front end, not a second engine: every construct it accepts
// maps onto spec keys (docs/sql.md lists the mapping), and every one it
// refuses is refused at its position with what is supported instead.
//
// The mapping, in short:
//
//   - CREATE TABLE read in FROM is the pipeline's source (the first one
//     read) or an input beside it (joined only); its WITH options set
//     source keys, its WATERMARK the event time; CREATE TABLE written by
//     INSERT INTO is a sink of the stage that makes its rows.
//   - A query is planned as relations over a producer (the source, an
//     input or a stage): WHERE and projections stay pending as expr-lang
//     text over the producer's fields; GROUP BY, a join, or an INSERT
//     whose rows need computing makes a stage (an aggregation, a join or
//     a select stage) that later relations read.
//   - SET 'key' = 'value' sets Flink's keys that have a tidemark meaning
//     (pipeline.name, parallelism.default, table.exec.state.ttl, …) and
//     tidemark's own as 'tidemark.<key>'; pipeline keys take their last
//     value, stage keys (allowed lateness, emit, late output) the value
//     in force at each INSERT.
//
// Errors are *parser.Error values positioned in the script. errAt and
// the other helpers called from many places are //go:noinline, for the
// binary's size (as in package parser).
package planner

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/tidemark/tidemark/spec"
	"github.com/tidemark/tidemark/sql/parser"
)

// Options configure Compile.
type Options struct {
	// File names the script (its base name is the pipeline's name when
	// neither 'pipeline.name' nor a single INSERT gives one).
	File string
}

// Load reads, parses and compiles the SQL script at path (placeholders
// ${NAME} from the environment).
func Load(path string) (*spec.Pipeline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := parser.Parse(path, data, parser.Options{})
	if err != nil {
		return nil, err
	}
	return Compile(s, Options{File: path})
}

// planner holds a script's catalog and the stages planned so far.
type planner struct {
	src         *parser.Source
	opts        Options
	tables      map[string]*table
	tableOrder  []*table
	views       map[string]*parser.CreateView
	funcs       map[string]*udf
	conversions map[*table]*timeConv
	// sets are the SET values in force; stageSets those of the INSERT
	// being planned.
	sets      map[string]*parser.Option
	setOrder  []string
	source    *table
	inputs    []*table
	stages    []*stageDef
	ins       *insertCtx
	insertNum int
	// viewStack guards against a view that reads itself.
	viewStack []string
	// procTime says a query calls PROCTIME() (the source fills procField).
	procTime bool
	// curAggAlias names the aggregates of the aggregation being planned
	// by their SELECT aliases (by signature).
	curAggAlias map[string]string
}

// udf is a CREATE FUNCTION naming a built-in.
type udf struct {
	name, builtin string
}

// insertCtx is the INSERT being planned.
type insertCtx struct {
	sink *table
	// top is the INSERT's own SELECT, whose columns without an alias take
	// the sink's column names (names), as the INSERT writes them.
	top   *parser.Select
	names []string
	sets  map[string]*parser.Option
	count int // stages made for it
	at    parser.Pos
}

//go:noinline
func (pl *planner) errAt(p parser.Pos, format string, args ...any) error {
	return pl.src.Errorf(p, format, args...)
}

// Compile plans a parsed script into a pipeline spec (defaults not
// applied: tidemark.Compile does that, with the contract).
func Compile(s *parser.Script, opts Options) (*spec.Pipeline, error) {
	pl := &planner{src: s.Source, opts: opts, tables: map[string]*table{}, views: map[string]*parser.CreateView{},
		funcs: map[string]*udf{}, conversions: map[*table]*timeConv{}, sets: map[string]*parser.Option{}}
	if pl.src == nil {
		pl.src = parser.NewSource(opts.File, "")
	}
	var inserts int
	for _, st := range s.Stmts {
		var err error
		switch st := st.(type) {
		case *parser.CreateTable:
			err = pl.createTable(st)
		case *parser.CreateView:
			err = pl.createView(st)
		case *parser.CreateFunction:
			err = pl.createFunction(st)
		case *parser.Set:
			err = pl.set(st)
		case *parser.Insert:
			inserts++
			err = pl.insert(st)
		case *parser.StatementSet:
			for _, in := range st.Inserts {
				inserts++
				if err = pl.insert(in); err != nil {
					break
				}
			}
		case *parser.Unsupported:
			err = pl.errAt(st.At, "%s statements are not supported: a tidemark script declares tables and views, sets options and inserts (CREATE TABLE, CREATE VIEW, CREATE FUNCTION, SET, RESET, INSERT INTO)", st.Keyword)
		}
		if err != nil {
			return nil, err
		}
	}
	if inserts == 0 {
		return nil, pl.errAt(parser.Pos{Line: 1, Col: 1}, "the script has no INSERT INTO: tidemark runs the INSERT statements of a script")
	}
	return pl.pipeline()
}

func (pl *planner) createView(v *parser.CreateView) error {
	if err := pl.checkQualified(v.Name); err != nil {
		return err
	}
	name := v.Name.Last().Name
	if _, ok := pl.views[name]; ok && !v.IfNotExists {
		return pl.errAt(v.Name.Position(), "view %s is declared twice", name)
	}
	if _, ok := pl.tables[name]; ok {
		return pl.errAt(v.Name.Position(), "%s is already a table", name)
	}
	pl.views[name] = v
	return nil
}

func (pl *planner) createFunction(f *parser.CreateFunction) error {
	name := strings.ToLower(f.Name.Last().Name)
	b, ok := builtinUDFs[f.Class]
	if !ok {
		var known []string
		for c := range builtinUDFs {
			known = append(known, c)
		}
		return pl.errAt(f.ClassAt, "tidemark runs no Java: a function class is mapped to a built-in of the same meaning, and '%s' has none (classes with one: %s)", f.Class, strings.Join(known, ", "))
	}
	pl.funcs[name] = &udf{name: name, builtin: b}
	return nil
}

// setting returns the value of a SET key in force (at the INSERT being
// planned, else now).
func (pl *planner) setting(key string) (*parser.Option, bool) {
	sets := pl.sets
	if pl.ins != nil {
		sets = pl.ins.sets
	}
	o, ok := sets[key]
	return o, ok
}

// finalSetting returns the last value a SET gave key in the script.
func (pl *planner) finalSetting(key string) (*parser.Option, bool) {
	o, ok := pl.sets[key]
	return o, ok
}

func (pl *planner) set(s *parser.Set) error {
	if s.Reset {
		if s.Key == "" {
			pl.sets = map[string]*parser.Option{}
			return nil
		}
		delete(pl.sets, s.Key)
		return nil
	}
	if s.Key == "" {
		return nil // SET alone lists the settings in Flink's client
	}
	if err := pl.checkSetKey(s); err != nil {
		return err
	}
	o := s.Option
	next := make(map[string]*parser.Option, len(pl.sets)+1)
	for k, v := range pl.sets {
		next[k] = v
	}
	next[s.Key] = &o
	pl.sets = next
	pl.setOrder = append(pl.setOrder, s.Key)
	return nil
}

// nameRE is what a pipeline or stage name may hold.
var nameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// pipeline assembles the spec from the planned stages and settings.
func (pl *planner) pipeline() (*spec.Pipeline, error) {
	p := &spec.Pipeline{}
	if o, ok := pl.finalSetting("pipeline.name"); ok {
		if !nameRE.MatchString(o.Value) {
			return nil, pl.errAt(o.ValueAt, "'pipeline.name' = '%s': a name starts with a letter and holds letters, digits, '_' and '-'", o.Value)
		}
		p.Name = o.Value
	} else {
		var finals []*stageDef
		for _, sd := range pl.stages {
			if len(sd.sinkTables) > 0 {
				finals = append(finals, sd)
			}
		}
		switch {
		case pl.insertNum == 1 && len(pl.sinkNames()) == 1:
			p.Name = pl.sinkNames()[0]
		default:
			base := strings.TrimSuffix(filepath.Base(pl.opts.File), filepath.Ext(pl.opts.File))
			base = regexp.MustCompile(`[^A-Za-z0-9_-]`).ReplaceAllString(base, "_")
			if base == "" || !nameRE.MatchString(base) {
				base = "sql_" + base
			}
			p.Name = base
		}
	}
	if pl.source == nil {
		return nil, pl.errAt(parser.Pos{Line: 1, Col: 1}, "the script reads no table: FROM needs a table with a source connector")
	}
	src, et, err := pl.sourceOf(pl.source)
	if err != nil {
		return nil, err
	}
	if et.Field == "" {
		return nil, pl.errAt(pl.source.def.At, "table %s has no WATERMARK: tidemark runs on event time (WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)", pl.source.name)
	}
	p.Source, p.EventTime = src, et
	if pl.procTime {
		p.Source.ProcessingTimeField = procField
	}
	for _, t := range pl.inputs {
		s, e, err := pl.sourceOf(t)
		if err != nil {
			return nil, err
		}
		if e.Field == "" && t.lookup {
			// A lookup table (checkAsOf): line n is a version from n ms.
			for _, pc := range t.phys {
				if pc.field == lookupField {
					return nil, pl.errAt(pc.at, "column %s is the line number tidemark gives a lookup table's rows: rename it", lookupField)
				}
			}
			s.Ordinal = &spec.Ordinal{Field: lookupField}
			e = spec.EventTime{Field: lookupField, Format: "epoch_ms"}
		}
		if e.Field == "" {
			return nil, pl.errAt(t.def.At, "table %s has no WATERMARK: an input's rows are joined on event time (WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)", t.name)
		}
		p.Inputs = append(p.Inputs, spec.Input{Name: t.name, Source: s, EventTime: e})
	}
	pl.pruneJoins()
	if err := pl.nameStages(p.Name); err != nil {
		return nil, err
	}
	stages := make([]spec.Stage, len(pl.stages))
	for i, sd := range pl.stages {
		st := sd.st
		st.Name = sd.name
		switch {
		case sd.kind == stageUnion:
			for _, in := range sd.unionIn {
				st.Union = append(st.Union, in.name)
			}
		case sd.input != nil:
			st.Input = sd.input.name
		case st.Join == nil && i > 0:
			// Reading the source: said, since a stage with no input reads
			// the stage before it.
			st.Input = "source"
		}
		if st.Join != nil {
			j := *st.Join
			for k, side := range []*spec.JoinSide{&j.Left, &j.Right} {
				switch {
				case sd.joinIn[k] != nil:
					side.Input = sd.joinIn[k].name
				case side.Input == "":
					side.Input = "source"
				}
			}
			st.Join = &j
		}
		stages[i] = st
	}
	if len(stages) == 1 && pl.stages[0].input == nil && stages[0].Join == nil && stages[0].EventTime == nil {
		// One stage reading the source: the top-level form, as a
		// single-stage pipeline file writes it.
		s := stages[0]
		p.Filter, p.Fields, p.Key, p.Window = s.Filter, s.Fields, s.Key, s.Window
		p.AllowedLateness, p.Aggregates, p.Emit, p.Late = s.AllowedLateness, s.Aggregates, s.Emit, s.Late
		p.Select, p.TopN, p.Sinks, p.Contributions = s.Select, s.TopN, s.Sinks, s.Contributions
	} else {
		p.Stages = stages
	}
	if err := pl.pipelineSettings(p); err != nil {
		return nil, err
	}
	return p, nil
}

// sinkNames lists the sink tables written, in INSERT order.
func (pl *planner) sinkNames() []string {
	var out []string
	seen := map[string]bool{}
	for _, sd := range pl.stages {
		for _, t := range sd.sinkTables {
			if !seen[t.name] {
				seen[t.name] = true
				out = append(out, t.name)
			}
		}
	}
	return out
}

// nameStages names every stage: one writing a sink after the sink's
// table (the pipeline's name for a lone stage), the others after the
// INSERT that planned them with a number.
func (pl *planner) nameStages(pipeline string) error {
	used := map[string]bool{}
	for _, t := range pl.inputs {
		used[t.name] = true
	}
	used["source"], used["reference"] = true, true
	for _, sd := range pl.stages {
		if len(pl.stages) == 1 {
			sd.name = pipeline
			return nil
		}
		if len(sd.sinkTables) > 0 && !used[sd.sinkTables[0].name] {
			sd.name = sd.sinkTables[0].name
			used[sd.name] = true
		}
	}
	for _, sd := range pl.stages {
		if sd.name != "" {
			continue
		}
		for k := sd.num; ; k++ {
			n := fmt.Sprintf("%s_%d", sd.base, k)
			if !used[n] {
				sd.name = n
				used[n] = true
				break
			}
		}
	}
	return nil
}

// sortedKeys is used for deterministic messages.
func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}
