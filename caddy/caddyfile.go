package squeezecaddy

import (
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/dustin/go-humanize"
)

// The Caddyfile directive, registered at init as Caddy's own directives
// are (see the comment on the module's registration), ordered after
// encode, that is inside it: squeeze encodes a response first, and encode,
// which leaves alone a response that has a Content-Encoding, compresses
// only what squeeze sent plain. Ordered before encode, squeeze would see
// encode's output and step aside, its deltas lost.
func init() {
	httpcaddyfile.RegisterHandlerDirective("squeeze", parseCaddyfile)
	httpcaddyfile.RegisterDirectiveOrder("squeeze", httpcaddyfile.After, "encode")
}

// parseCaddyfile makes the handler of a squeeze directive.
func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	handler := new(Handler)
	err := handler.UnmarshalCaddyfile(h.Dispenser)
	return handler, err
}

// UnmarshalCaddyfile sets up h from Caddyfile tokens. The syntax follows
// encode's, with squeeze's additions:
//
//	squeeze [<codings...>] {
//		zstd|br|gzip|deflate [<level>]
//		minimum_length <bytes>
//		types <media types...>
//		dictionary <match patterns...>
//		max_request_body <size>
//		cache <size>
//		trusted_etags
//		length_hiding <bytes>
//		learned <match pattern> {
//			dictionary_size <size>
//			samples <count>
//			sample_budget <size>
//			training_memory <size>
//			interval <duration>
//			path <prefix>
//			credential_headers <request header names...>
//		}
//		metrics
//		store redis <host:port or redis:// or rediss:// URL> [<key prefix>]
//	}
//
// Codings, as arguments or one per line (with a level), are offered in the
// order written. Sizes take units (10MiB), durations Caddy's (10m, 1d).
// trusted_etags needs cache; learned may be given once per pattern, its
// block optional.
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the directive's name
	h.Prefer = append(h.Prefer, d.RemainingArgs()...)
	for d.NextBlock(0) {
		switch name := d.Val(); name {
		case "zstd", "br", "gzip", "deflate", "dcz", "dcb":
			h.Prefer = append(h.Prefer, name)
			if d.NextArg() {
				level, err := strconv.Atoi(d.Val())
				if err != nil {
					return d.Errf("%s level %q: not a number", name, d.Val())
				}
				if h.Levels == nil {
					h.Levels = map[string]int{}
				}
				h.Levels[name] = level
			}
		case "minimum_length":
			if !d.NextArg() {
				return d.ArgErr()
			}
			n, err := strconv.Atoi(d.Val())
			if err != nil {
				return d.Errf("minimum_length %q: not a number of bytes", d.Val())
			}
			h.MinLength = n
		case "types":
			h.Types = append(h.Types, d.RemainingArgs()...)
			if len(h.Types) == 0 {
				return d.ArgErr()
			}
		case "dictionary":
			h.Dictionaries = append(h.Dictionaries, d.RemainingArgs()...)
			if len(h.Dictionaries) == 0 {
				return d.ArgErr()
			}
		case "max_request_body", "cache":
			if !d.NextArg() {
				return d.ArgErr()
			}
			n, err := humanize.ParseBytes(d.Val())
			if err != nil || n > 1<<62 {
				return d.Errf("%s %q: not a size", name, d.Val())
			}
			if name == "cache" {
				h.CacheSize = int64(n)
			} else {
				h.MaxRequestBody = int64(n)
			}
		case "trusted_etags":
			h.TrustedETags = true
		case "metrics":
			h.Metrics = true
		case "length_hiding":
			if !d.NextArg() {
				return d.ArgErr()
			}
			n, err := strconv.Atoi(d.Val())
			if err != nil {
				return d.Errf("length_hiding %q: not a number of bytes", d.Val())
			}
			h.LengthHiding = n
		case "learned":
			if !d.NextArg() {
				return d.ArgErr()
			}
			l := Learned{Pattern: d.Val()}
			if d.NextArg() {
				return d.ArgErr()
			}
			if err := l.unmarshalBlock(d); err != nil {
				return err
			}
			h.Learned = append(h.Learned, l)
		case "store":
			args := d.RemainingArgs()
			if len(args) < 2 || len(args) > 3 || args[0] != "redis" {
				return d.Errf("store: want store redis <host:port or URL> [<key prefix>]")
			}
			h.Redis = &Redis{Address: args[1]}
			if len(args) == 3 {
				h.Redis.Prefix = args[2]
			}
		default:
			return d.Errf("unrecognized squeeze subdirective %q", name)
		}
		if d.NextArg() {
			return d.ArgErr()
		}
	}
	return nil
}

// unmarshalBlock reads the block of a learned subdirective into l.
func (l *Learned) unmarshalBlock(d *caddyfile.Dispenser) error {
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		name := d.Val()
		if !d.NextArg() {
			return d.ArgErr()
		}
		val := d.Val()
		if name == "credential_headers" {
			l.CredentialHeaders = append(l.CredentialHeaders, val)
			l.CredentialHeaders = append(l.CredentialHeaders, d.RemainingArgs()...)
			continue
		}
		switch name {
		case "dictionary_size", "sample_budget", "training_memory":
			n, err := humanize.ParseBytes(val)
			if err != nil || n > 1<<62 {
				return d.Errf("learned %s %q: not a size", name, val)
			}
			switch name {
			case "dictionary_size":
				if n > 1<<30 {
					return d.Errf("learned dictionary_size %q: not a size", val)
				}
				l.DictionarySize = int(n)
			case "sample_budget":
				l.SampleBudget = int64(n)
			default:
				l.TrainingMemory = int64(n)
			}
		case "samples":
			n, err := strconv.Atoi(val)
			if err != nil {
				return d.Errf("learned samples %q: not a number", val)
			}
			l.Samples = n
		case "interval":
			dur, err := caddy.ParseDuration(val)
			if err != nil {
				return d.Errf("learned interval %q: %v", val, err)
			}
			l.Interval = caddy.Duration(dur)
		case "path":
			l.Path = val
		default:
			return d.Errf("unrecognized learned subdirective %q", name)
		}
		if d.NextArg() {
			return d.ArgErr()
		}
	}
	return nil
}
