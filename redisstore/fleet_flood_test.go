package redisstore_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/squeezehttp/squeeze"
	"github.com/squeezehttp/squeeze/internal/testtool"
	"github.com/squeezehttp/squeeze/redisstore"
)

// floodFor runs TestFleetDictionaryInUseOutlivesAFlood for that long, at
// the defaults (three replicas, the default write budget and refresh
// period, a 6 MB Redis): by hand, its figures in BENCHMARKS.md. Without
// it the test runs a short version, a store that turns over in seconds.
var floodFor = flag.Duration("fleet.flood", 0, "run TestFleetDictionaryInUseOutlivesAFlood this long at the defaults (e.g. 10m)")

// floodRun is what one fleet saw under the flood.
type floodRun struct {
	lostAfter    time.Duration // when the dictionary's key was first gone; 0 if never
	deltas, gets int64         // the real client's deltas and requests
	written      []int64       // bytes each replica wrote
	writes       []int64       // values each replica wrote
	refreshes    int64
	evicted      string // Redis's evicted_keys
	freshDelta   bool   // a replica started at the end sent a delta
	elapsed      time.Duration
}

// runFlood starts replicas sharing srv, has the real dictionary (v1)
// earned and written, then for d floods them with query strings a client
// names by hash (each earning its write) while, if real, a real client
// fetches v2 naming v1, round robin, every 100 ms; a probe that does not touch the
// key (EXISTS) notes when it is gone. When stop is closed a fresh replica
// is asked for v2 naming v1.
func runFlood(t *testing.T, srv *testtool.Redis, raw *redis.Client, files [][]byte, replicas, pace int, real bool, stop <-chan struct{}, opts ...squeeze.SharedOption) floodRun {
	t.Helper()
	prefix := "flood:"
	store := func() squeeze.SharedStore { return newStore(t, srv, true, redisstore.WithPrefix(prefix)) }
	var fleet []*fleetReplica
	var c *http.Client
	for range replicas {
		var r *fleetReplica
		r, c = floodReplica(t, store(), files, opts...)
		fleet = append(fleet, r)
	}
	for range servesToEarn {
		clientGet(t, c, fleet[0].url+"/js/app.v1.js")
	}
	realKey := prefix + dictKey(files[0])
	waitStored(t, raw, realKey, 1)

	start := time.Now()
	var run floodRun
	var wg sync.WaitGroup
	var next atomic.Int64
	var tick <-chan time.Time // pace: the flood's bodies a second, 0 for as fast as it goes
	if pace > 0 {
		ticker := time.NewTicker(time.Second / time.Duration(pace))
		defer ticker.Stop()
		tick = ticker.C
	}
	for range 6 { // the flood
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if tick != nil {
					select {
					case <-stop:
						return
					case <-tick:
					}
				}
				i := next.Add(1)
				r := fleet[int(i)%len(fleet)]
				q := "q=" + strconv.FormatInt(i, 10)
				clientGet(t, c, r.url+"/js/app.v1.js?"+q)
				clientGet(t, c, r.url+"/js/app.v1.js?"+q, "Available-Dictionary", availableDictionary(floodBody(files, q)))
			}
		})
	}
	var deltas, gets atomic.Int64
	wg.Go(func() { // the real client
		for i := 0; real; i++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if isDelta(fleet[i%len(fleet)].get(t, files, 2, files[0])) {
				deltas.Add(1)
			}
			gets.Add(1)
		}
	})
	var lost atomic.Int64
	wg.Go(func() { // the probe
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if n, err := raw.Exists(t.Context(), realKey).Result(); err == nil && n == 0 {
				lost.CompareAndSwap(0, int64(time.Since(start)))
			}
		}
	})
	<-stop
	wg.Wait()
	run.elapsed = time.Since(start)
	run.lostAfter = time.Duration(lost.Load())
	run.deltas, run.gets = deltas.Load(), gets.Load()
	for _, r := range fleet {
		var s struct {
			Shared struct {
				Writes       int64 `json:"writes"`
				BytesWritten int64 `json:"bytes_written"`
				Refreshes    int64 `json:"refreshes"`
			} `json:"shared_store"`
		}
		if err := json.Unmarshal([]byte(r.counters.String()), &s); err != nil {
			t.Fatal(err)
		}
		run.written = append(run.written, s.Shared.BytesWritten)
		run.writes = append(run.writes, s.Shared.Writes)
		run.refreshes += s.Shared.Refreshes
	}
	info, _ := raw.Info(t.Context(), "stats").Result()
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "evicted_keys:"); ok {
			run.evicted = v
		}
	}
	fresh := startReplica(t, store(), files)
	run.freshDelta = isDelta(fresh.get(t, files, 2, files[0]))
	return run
}

func (r floodRun) String() string {
	perHour := make([]string, len(r.written))
	for i, b := range r.written {
		perHour[i] = fmt.Sprintf("%.0f MB (%d values)", float64(b)/r.elapsed.Hours()/1e6, int64(float64(r.writes[i])/r.elapsed.Hours()))
	}
	lost := "never"
	if r.lostAfter > 0 {
		lost = r.lostAfter.Round(time.Second).String()
	}
	return fmt.Sprintf("%v of flood: the dictionary's key lost after %s; the real client got %d deltas of %d; a fresh replica sent a delta: %v; %d refreshes; Redis evicted %s keys; written per replica per hour: %s",
		r.elapsed.Round(time.Second), lost, r.deltas, r.gets, r.freshDelta, r.refreshes, r.evicted, strings.Join(perHour, ", "))
}

// A flood of writes into an LRU Redis evicts the least recently used keys;
// the dictionary clients use is used only from the replicas' own copies,
// so without its key kept fresh a flood evicts it and a replica started
// afterwards sends zstd. The baseline runs beside it on a Redis of its
// own without the real client: to Redis the same as a fleet that does
// not refresh what it uses, it shows that the flood does turn the store
// over within the run.
func TestFleetDictionaryInUseOutlivesAFlood(t *testing.T) {
	if testing.Short() && *floodFor == 0 {
		t.Skip("a flood of 20 to 60 seconds: it runs without -short (.ci/run runs it without -race)")
	}
	base := releases(t, 2)
	// Scripts of 34 KB: a 3 MB Redis holds some dozens.
	files := [][]byte{append(append([]byte{}, base[0]...), base[0]...), append(append([]byte{}, base[1]...), base[1]...)}
	// The short version: a flood of 10 bodies a second, each earning its
	// write within a budget that takes them all, turns a 3 MB Redis over
	// in some seconds, several times the refresh period.
	maxmemory, d, replicas, pace := "3mb", 20*time.Second, 2, 10
	opts := []squeeze.SharedOption{squeeze.SharedWriteBudget(600, 64<<20)}
	if *floodFor > 0 {
		maxmemory, d, replicas, pace = "6mb", *floodFor, 3, 0
		opts = nil
	}
	var runs [2]floodRun
	var raws [2]*redis.Client
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, real := range []bool{true, false} {
		srv, raw := startRedis(t, "--maxmemory", maxmemory, "--maxmemory-policy", "allkeys-lru")
		raws[i] = raw
		wg.Go(func() { runs[i] = runFlood(t, srv, raw, files, replicas, pace, real, stop, opts...) })
	}
	// For d, and in the short version on until the baseline has lost the
	// dictionary, at most 3d: a loaded machine floods more slowly.
	time.Sleep(d)
	for deadline := time.Now().Add(2 * d); *floodFor == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if n, err := raws[1].Exists(t.Context(), "flood:"+dictKey(files[0])).Result(); err == nil && n == 0 {
			break
		}
	}
	close(stop)
	wg.Wait()
	with, without := runs[0], runs[1]
	t.Logf("in use (%d replicas, %s Redis): %v", replicas, maxmemory, with)
	t.Logf("baseline, no client using it: %v", without)
	if with.lostAfter != 0 || !with.freshDelta {
		t.Errorf("the dictionary in use was lost after %v; a fresh replica sent a delta: %v; want it kept", with.lostAfter, with.freshDelta)
	}
	if with.deltas != with.gets {
		t.Errorf("the real client got %d deltas of %d requests; want every one", with.deltas, with.gets)
	}
	if without.lostAfter == 0 {
		t.Errorf("the baseline kept the dictionary: the flood did not turn the store over, so the test shows nothing")
	}
}
