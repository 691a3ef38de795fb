package squeezecaddy

import (
	"strconv"

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
//		store redis <host:port or redis:// or rediss:// URL> [<key prefix>]
//	}
//
// Codings, as arguments or one per line (with a level), are offered in the
// order written. Sizes take units (10MiB).
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
