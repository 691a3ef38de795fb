// Command caddy-squeeze is Caddy with its standard modules and squeeze's
// (http.handlers.squeeze, the squeeze directive): what xcaddy build --with
// github.com/squeezehttp/squeeze/caddy makes, buildable with go build.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/squeezehttp/squeeze/caddy"
)

func main() {
	caddycmd.Main()
}
