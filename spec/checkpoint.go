package spec

import (
	"net/url"
	"regexp"
	"strings"
)

// urlScheme matches a URL scheme (RFC 3986, section 3.1).
var urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*$`)

// validateStore checks checkpoint.store (set): a PostgreSQL URL, no
// checkpoint.dir beside it, and a group pipeline (one instance, which
// reads every partition itself, checkpoints into checkpoint.dir). Messages
// never quote the value, which may hold a password.
func validateStore(p *Pipeline, add func(key, format string, args ...any)) {
	c := p.Checkpoint
	if p.Source.Assignment != "group" {
		add("checkpoint.store", "needs source.assignment: group: the store holds the checkpoints of a group of instances; one instance keeps them in checkpoint.dir")
	}
	if c.Dir != "" {
		add("checkpoint.store", "give dir or store, not both: a pipeline's checkpoints live in one place (dir: a directory, local or mounted by every instance; store: a PostgreSQL URL)")
	}
	const want = "want a PostgreSQL URL, postgres://… or postgresql://… (or leave store out to keep the checkpoints in checkpoint.dir)"
	scheme, _, ok := strings.Cut(c.Store, "://")
	if !ok || !urlScheme.MatchString(scheme) {
		add("checkpoint.store", "not a URL: "+want)
		return
	}
	if s := strings.ToLower(scheme); s != "postgres" && s != "postgresql" {
		add("checkpoint.store", "scheme %q: "+want, scheme)
		return
	}
	if _, err := url.Parse(c.Store); err != nil {
		add("checkpoint.store", "the URL does not parse (a password holding @, /, : or %% must be percent-encoded): "+want)
	}
}
