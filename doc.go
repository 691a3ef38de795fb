// Package squeeze is [net/http] middleware that compresses responses with
// zstd, br or gzip, negotiated per RFC 9110, and decodes compressed request
// bodies with hard limits against decompression bombs.
//
// A [Middleware] holds back the first bytes of each response (up to
// [WithBufferSize]) to decide, in one place, whether compressing is worth
// it; [Observer].Response reports each [Reason] it went out unencoded. A
// body that ends within the buffer is sent in one piece with a
// Content-Length, a longer or flushed one is streamed, and one that goes
// out unchanged whatever its length passes through as the handler writes
// it. Encoders and buffers come from pools, one per coding and level.
package squeeze
