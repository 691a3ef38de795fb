// Package squeeze is [net/http] middleware that compresses responses with
// zstd, br or gzip, negotiated per RFC 9110, and decodes compressed request
// bodies with hard limits against decompression bombs.
//
// A [Middleware] holds back the first bytes of each response (up to
// [WithBufferSize]) to decide whether compressing is worth it: bodies below
// [WithMinSize], content types outside [WithContentTypes], bodiless statuses,
// ranges, already-encoded bodies and Cache-Control: no-transform go out
// unchanged. Every such reason is a case of one decision, which
// [Observer].Response reports as its [Reason]. A body
// that may be encoded and that ends within the buffer, or whose declared
// Content-Length fits in it, is sent in one piece with a Content-Length, or
// as it is when encoding would not make it smaller; a longer one, or one the
// handler flushes, is streamed. A body that goes out unchanged whatever its
// length (the client accepts no offered coding, the type is not one to
// compress, ...) is not held back: it passes through as the handler writes
// it, and net/http frames it as it would without squeeze.
// Encoders and buffers come from pools built by [New], one per coding and
// level, and go back, reset, when the response ends.
package squeeze
