// Package fleet holds the end-to-end test of a fleet: three replicas of a
// squeeze server, each a process of its own, behind HAProxy in
// round-robin without stickiness, sharing what they learn through Redis
// (github.com/squeezehttp/squeeze/redisstore), and squeeze's Transport as
// their client. It has no code but its test.
package fleet
