// records.go: the record browser — read up to MaxRecords records (and
// MaxRecordBytes of keys and values) of a partition from an offset or a
// timestamp, fetched from the leader as a consumer does, and render keys
// and values as text, pretty JSON or hex.

package console

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/actorlog/actorlog/messages"
	"github.com/actorlog/actorlog/storage/record"
)

const (
	// MaxRecords bounds the records one browse returns.
	MaxRecords = 500
	// DefaultRecords is how many records a browse returns by default.
	DefaultRecords = 20
	// MaxRecordBytes bounds the key and value bytes one browse returns.
	MaxRecordBytes = 1 << 20
	// MaxValueBytes bounds the bytes of one key or value shown; the rest
	// is cut ("value_truncated").
	MaxValueBytes = 64 << 10
	// maxFetches bounds the fetches of one browse.
	maxFetches = 8
	// maxInflated bounds what one compressed batch may inflate to.
	maxInflated = 16 << 20
)

// Formats of keys and values.
const (
	FormatAuto = "auto"
	FormatText = "text"
	FormatJSON = "json"
	FormatHex  = "hex"
)

// RecordsView is /api/v1/topics/{name}/records.
type RecordsView struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Offset is where the browse started (resolved from the timestamp or
	// the log start when none was given).
	Offset         int64  `json:"offset"`
	Limit          int    `json:"limit"`
	Format         string `json:"format"`
	LogStartOffset int64  `json:"log_start_offset"`
	HighWatermark  int64  `json:"high_watermark"`
	// NextOffset is the offset after the last record returned: where the
	// next page starts.
	NextOffset int64 `json:"next_offset"`
	// Truncated: MaxRecordBytes stopped the browse before Limit records.
	Truncated bool         `json:"truncated"`
	Records   []RecordView `json:"records"`
	// Partitions is the topic's partition count (for the page's form).
	Partitions int `json:"-"`
	// Timestamp is the query's timestamp, -1 when none (for the form).
	Timestamp int64 `json:"-"`
}

// RecordView is one record of RecordsView. Key and Value are nil for a
// null key or value.
type RecordView struct {
	Offset         int64        `json:"offset"`
	Timestamp      int64        `json:"timestamp"`
	Time           string       `json:"time"`
	Key            *string      `json:"key"`
	KeyFormat      string       `json:"key_format"`
	Value          *string      `json:"value"`
	ValueFormat    string       `json:"value_format"`
	ValueSize      int          `json:"value_size"`
	ValueTruncated bool         `json:"value_truncated"`
	Headers        []HeaderView `json:"headers"`
}

// HeaderView is a record header; its value is rendered as text, or hex
// when it is not UTF-8.
type HeaderView struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// recordsQuery is a checked browse request.
type recordsQuery struct {
	partition int32
	offset    int64 // -1: from the timestamp, or the log start
	timestamp int64 // -1: none
	limit     int
	format    string
}

// parseRecordsQuery reads partition, offset or timestamp, limit and
// format; each bad one is a 400 naming it.
func parseRecordsQuery(r *http.Request) (recordsQuery, error) {
	q := r.URL.Query()
	out := recordsQuery{offset: -1, timestamp: -1, limit: DefaultRecords, format: FormatAuto}
	if s := q.Get("partition"); s != "" {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 0 {
			return out, badRequest("partition %q: want a partition number (0 or more)", s)
		}
		out.partition = int32(n)
	}
	if s := q.Get("offset"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return out, badRequest("offset %q: want an offset (0 or more)", s)
		}
		out.offset = n
	}
	if s := q.Get("timestamp"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return out, badRequest("timestamp %q: want milliseconds since the Unix epoch", s)
		}
		if out.offset >= 0 {
			return out, badRequest("give offset or timestamp, not both")
		}
		out.timestamp = n
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxRecords {
			return out, badRequest("limit %q: want 1 to %d records", s, MaxRecords)
		}
		out.limit = n
	}
	if s := q.Get("format"); s != "" {
		switch s {
		case FormatAuto, FormatText, FormatJSON, FormatHex:
			out.format = s
		default:
			return out, badRequest("format %q: want auto, text, json or hex", s)
		}
	}
	return out, nil
}

// records browses topic name as q asks.
func (c *Console) records(ctx context.Context, name string, q recordsQuery) (*RecordsView, error) {
	t, err := c.topicMetadata(ctx, name)
	if err != nil {
		return nil, err
	}
	var p *messages.PartitionMetadata
	for _, pm := range t.Partitions {
		if pm.Partition == q.partition {
			p = pm
		}
	}
	if p == nil {
		return nil, notFound("partition %d of topic %s does not exist (it has %d)", q.partition, name, len(t.Partitions))
	}
	v := &RecordsView{Topic: name, Partition: q.partition, Limit: q.limit, Format: q.format, Records: []RecordView{},
		Partitions: len(t.Partitions), Timestamp: q.timestamp}
	from := q.offset
	if from < 0 {
		ts := int64(messages.EarliestTimestamp)
		if q.timestamp >= 0 {
			ts = q.timestamp
		}
		lo, err := c.cfg.Offsets.ListOffsets(ctx, p, name, ts)
		if err != nil {
			return nil, fmt.Errorf("offset of %s-%d: %w", name, q.partition, err)
		}
		from = lo.Offset
		if from < 0 { // no record at or after the timestamp: start at the end
			end, err := c.cfg.Offsets.ListOffsets(ctx, p, name, messages.LatestTimestamp)
			if err != nil {
				return nil, fmt.Errorf("log end of %s-%d: %w", name, q.partition, err)
			}
			from = end.Offset
		}
	}
	v.Offset, v.NextOffset = from, from
	budget := MaxRecordBytes
	for range maxFetches {
		resp, err := c.cfg.Records.Fetch(ctx, p, name, v.NextOffset, int32(MaxRecordBytes))
		if err != nil {
			return nil, fmt.Errorf("read %s-%d at %d: %w", name, q.partition, v.NextOffset, err)
		}
		v.LogStartOffset, v.HighWatermark = resp.LogStartOffset, resp.HighWatermark
		before := v.NextOffset
		full, err := v.add(resp.Records, q, &budget)
		if err != nil {
			return nil, fmt.Errorf("read %s-%d at %d: %w", name, q.partition, before, err)
		}
		if full || v.NextOffset == before || v.NextOffset >= v.HighWatermark {
			break
		}
	}
	return v, nil
}

// add appends the records of batches from v.NextOffset on, until v holds
// q.limit records or budget bytes run out; full reports either.
func (v *RecordsView) add(batches []byte, q recordsQuery, budget *int) (full bool, err error) {
	sc := record.Batches(batches)
	var rec record.Record
	for sc.Next() {
		h := sc.Header()
		var br record.BatchReader
		if err := sc.Read(&br, maxInflated); err != nil {
			return false, fmt.Errorf("batch at %d: %w", h.BaseOffset, err)
		}
		for br.Next(&rec) {
			if rec.Offset < v.NextOffset || h.Control() {
				continue
			}
			size := len(rec.Key) + len(rec.Value)
			if len(v.Records) >= q.limit {
				return true, nil
			}
			if size > *budget && len(v.Records) > 0 {
				v.Truncated = true
				return true, nil
			}
			*budget -= size
			v.Records = append(v.Records, newRecordView(&rec, q.format))
			v.NextOffset = rec.Offset + 1
		}
		if err := br.Err(); err != nil {
			return false, fmt.Errorf("batch at %d: %w", h.BaseOffset, err)
		}
		// Past the whole batch: control records, and offsets compaction
		// removed, are skipped.
		v.NextOffset = max(v.NextOffset, h.NextOffset())
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("batches: %w", err)
	}
	return len(v.Records) >= q.limit, nil
}

func newRecordView(rec *record.Record, format string) RecordView {
	rv := RecordView{Offset: rec.Offset, Timestamp: rec.Timestamp, ValueSize: len(rec.Value), Headers: []HeaderView{}}
	if rec.Timestamp >= 0 {
		rv.Time = time.UnixMilli(rec.Timestamp).UTC().Format(time.RFC3339Nano)
	}
	if rec.Key != nil {
		s, f, _ := renderBytes(rec.Key, format)
		rv.Key, rv.KeyFormat = &s, f
	}
	if rec.Value != nil {
		s, f, cut := renderBytes(rec.Value, format)
		rv.Value, rv.ValueFormat, rv.ValueTruncated = &s, f, cut
	}
	for _, hd := range rec.Headers {
		val := string(hd.Value)
		if !utf8.Valid(hd.Value) {
			val = hex.EncodeToString(hd.Value)
		}
		rv.Headers = append(rv.Headers, HeaderView{Key: hd.Key, Value: val})
	}
	return rv
}

// renderBytes renders b (cut to MaxValueBytes) as format asks: json
// pretty-prints valid JSON, text shows UTF-8, hex dumps; what cannot be
// shown as asked falls back (json → text → hex). auto picks the first
// that fits. It returns the text, the format used and whether b was cut.
func renderBytes(b []byte, format string) (string, string, bool) {
	cut := len(b) > MaxValueBytes
	if cut {
		b = b[:MaxValueBytes]
	}
	if format == FormatHex {
		return hex.Dump(b), FormatHex, cut
	}
	if format == FormatAuto || format == FormatJSON {
		var buf bytes.Buffer
		if !cut && json.Valid(b) && json.Indent(&buf, b, "", "  ") == nil {
			return buf.String(), FormatJSON, cut
		}
	}
	if printable(b) {
		return string(b), FormatText, cut
	}
	return hex.Dump(b), FormatHex, cut
}

// printable reports whether b is UTF-8 text without control characters
// other than tab and newlines.
func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r' {
			return false
		}
	}
	return true
}
