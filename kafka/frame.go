// frame.go holds the wire framing around kmsg's codecs: a request frame is
// a 4-byte big-endian length, then the request header (api key, version,
// correlation id, nullable client id, and for flexible versions a tagged
// field section), then the body; a response frame is a length, the
// correlation id, a tag section for flexible responses except ApiVersions
// (whose response header is always v0), then the body. Bodies are decoded
// and encoded only by kmsg (RequestForKey, SetVersion, ReadFrom, AppendTo).

package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Reasons a connection is closed for its input: the "reason" field of the
// log line, and the key the lines are rate-limited by.
const (
	reasonFrameTooLarge = "frame_too_large"
	reasonBadLength     = "bad_length"
	reasonTruncated     = "truncated_frame"
	reasonBadHeader     = "bad_header"
	reasonUnknownKey    = "unsupported_api_key"
	reasonBadVersion    = "unsupported_version"
	reasonBadBody       = "bad_body"
	reasonIdle          = "idle"
	reasonPanic         = "handler_panic"
	reasonHandler       = "handler_error"
	reasonWrite         = "write_failed"
)

// inputError is input that closes its connection: reason says which kind.
type inputError struct {
	reason string
	err    error
}

func (e *inputError) Error() string { return e.reason + ": " + e.err.Error() }
func (e *inputError) Unwrap() error { return e.err }

func refuse(reason, format string, args ...any) *inputError {
	return &inputError{reason: reason, err: fmt.Errorf(format, args...)}
}

// headerSize is the smallest request header: key, version, correlation id
// and a null client id.
const headerSize = 2 + 2 + 4 + 2

// frameChunk is how much of a frame is allocated before its bytes arrive:
// the buffer grows with what the peer actually sends, so a length alone
// cannot make the server allocate MaxRequestBytes.
const frameChunk = 64 << 10

// frameGrowth is the factor a full frame buffer grows by: to frameGrowth
// times the bytes received, capped at the frame's length. Growing ×4
// rather than ×2 halves the copies and allocations of a large frame (a
// 1 MiB Produce: 64 KiB, 256 KiB, 1 MiB, one copy of 320 KiB; doubling
// took 5 allocations, 2.8 MiB with Go's rounding, and ~1 MiB of copies)
// while what a peer can make the server allocate stays bounded: at most
// frameChunk before any byte arrives, then under frameGrowth·4/3 (≈5.3)
// times the bytes received.
const frameGrowth = 4

// readFrame reads one frame body of n bytes (the length already read and
// checked), growing its buffer as the bytes arrive. A frame cut short by the
// end of the stream is io.ErrUnexpectedEOF.
func readFrame(r io.Reader, n int) ([]byte, error) {
	buf := make([]byte, 0, min(n, frameChunk))
	for len(buf) < n {
		if len(buf) == cap(buf) {
			// Exactly sized (slices.Grow would round a last step
			// up by its own growth policy, past n).
			grown := make([]byte, len(buf), min(n, frameGrowth*cap(buf)))
			copy(grown, buf)
			buf = grown
		}
		// Never past n: the bytes after this frame belong to the next
		// pipelined request.
		m, err := r.Read(buf[len(buf):min(cap(buf), n)])
		buf = buf[:len(buf)+m]
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			if len(buf) == n {
				break
			}
			return buf, err
		}
	}
	return buf, nil
}

// checkLength vets a frame's length prefix against the limit.
func checkLength(size int32, limit int32) *inputError {
	switch {
	case size < 0:
		return refuse(reasonBadLength, "frame length %d is negative", size)
	case size < headerSize:
		return refuse(reasonBadLength, "frame length %d is shorter than a request header (%d)", size, headerSize)
	case size > limit:
		return refuse(reasonFrameTooLarge, "frame length %d exceeds socket.request.max.bytes %d", size, limit)
	}
	return nil
}

// header is a parsed request header (v1, or v2 for flexible versions).
type header struct {
	key      int16
	version  int16
	corr     int32
	clientID *string
}

// parseRequest parses one frame (without its length) into its header and
// its decoded request, vetted against the server's table t. A frame that cannot be served is an *inputError;
// the header is returned as far as it was read, for the log line. Versions
// are vetted against the API table before the body is decoded: a key not in
// the table, or a version outside what the table advertises, closes the
// connection as Kafka does ("not enabled"), except ApiVersions above its
// range, whose body is not decoded (KIP-511: the handler answers v0 with
// UNSUPPORTED_VERSION).
func parseRequest(t *table, frame []byte) (header, kmsg.Request, *inputError) {
	var h header
	r := kbin.Reader{Src: frame}
	h.key = r.Int16()
	h.version = r.Int16()
	h.corr = r.Int32()
	h.clientID = r.NullableString()
	if !r.Ok() {
		return h, nil, refuse(reasonBadHeader, "request header of %d bytes does not parse", len(frame))
	}
	a := t.lookup(h.key)
	if a == nil {
		return h, nil, refuse(reasonUnknownKey, "api key %d (%s) is not served", h.key, kmsg.NameForKey(h.key))
	}
	apiVersionsAbove := h.key == apiVersionsKey && h.version > a.advertisedMax
	if h.version < a.advertisedMin || (h.version > a.advertisedMax && !apiVersionsAbove) {
		return h, nil, refuse(reasonBadVersion, "%s version %d is outside %d-%d", a.name, h.version, a.advertisedMin, a.advertisedMax)
	}
	req := kmsg.RequestForKey(h.key)
	req.SetVersion(h.version)
	if req.IsFlexible() {
		kmsg.SkipTags(&r)
		if !r.Ok() {
			return h, nil, refuse(reasonBadHeader, "%s v%d request header tags do not parse", a.name, h.version)
		}
	}
	if apiVersionsAbove {
		return h, req, nil
	}
	if err := req.ReadFrom(r.Src); err != nil {
		return h, nil, &inputError{reason: reasonBadBody, err: fmt.Errorf("%s v%d body of %d bytes: %w", a.name, h.version, len(r.Src), err)}
	}
	return h, req, nil
}

// appendResponse appends resp's frame for correlation id corr to dst.
func appendResponse(dst []byte, corr int32, resp kmsg.Response) []byte {
	dst = slices.Grow(dst, responseSizeHint(resp))
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // length, filled in below
	dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		dst = append(dst, 0) // empty response header tag section
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// responseSizeHint is about how many bytes resp encodes to when that is
// large: a Fetch response is mostly its record batches, so its buffer is
// grown once for them rather than doubled (and copied) ~log2(size/cap)
// times while kmsg appends them (issue 13's profile: growslice under
// FetchResponse.AppendTo was ~10% of a host's CPU in a 1 KiB consume).
// 0 for every other response.
func responseSizeHint(resp kmsg.Response) int {
	fr, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return 0
	}
	n := 64
	for i := range fr.Topics {
		t := &fr.Topics[i]
		n += 64 + len(t.Topic)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			n += 96 + len(p.RecordBatches) + 24*len(p.AbortedTransactions)
		}
	}
	return n
}
