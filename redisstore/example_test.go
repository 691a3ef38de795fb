package redisstore_test

import (
	"log"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/redisstore"
)

// Every replica of a fleet runs the same code: each remembers what it
// sends as dictionaries and writes them to Redis, and serves deltas against
// dictionaries any replica remembered. It needs a Redis server, so it has
// no output to check.
func Example() {
	opt := &redis.Options{
		Addr: "localhost:6379",
		// Let the store's and squeeze's deadlines end a call (see the
		// package documentation).
		ContextTimeoutEnabled: true,
	}
	// Fail a reply that declares more than squeeze reads, before go-redis
	// allocates it.
	opt.Dialer = redisstore.LimitReplies(redis.NewDialer(opt), 0)
	client := redis.NewClient(opt)
	defer client.Close()

	store, err := redisstore.New(client,
		redisstore.WithPrefix("myapp:squeeze:"),
		redisstore.WithLifetime(14*24*time.Hour), // deploys are fortnightly
	)
	if err != nil {
		log.Fatal(err)
	}
	mw, err := squeeze.New(
		squeeze.WithDictionaryMatch("/js/app.*.js"),
		squeeze.WithSharedStore(store,
			// What this replica may write a minute: Redis's maxmemory
			// holds the fleet's budget for the store's lifetime.
			squeeze.SharedWriteBudget(120, 32<<20)),
	)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/js/", mw.Handler(http.FileServer(http.Dir("static"))))
	log.Fatal(http.ListenAndServe(":8080", mux))
}
