// api_test.go: the API table's invariants, the ApiVersions answer built
// from it, and the pure pieces around them (framing, header parsing,
// config, topic ids).

package kafka

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"testing"
	"testing/iotest"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAPITableIsConsistent(t *testing.T) {
	withoutData := map[int16][2]int16{3: {0, 12}, 18: {0, 4}}
	withData := map[int16][2]int16{0: {0, 12}, 1: {4, 12}, 2: {1, 7}, 3: {0, 12}, 18: {0, 4}, 22: {0, 5}, 23: {2, 4}}
	for name, tc := range map[string]struct {
		cfg  Config
		want map[int16][2]int16
	}{
		"no data backend": {Config{Backend: &fakeBackend{}}, withoutData},
		"data backend":    {Config{Backend: &fakeBackend{}, Data: newFakeData()}, withData},
	} {
		tbl := newTable(&tc.cfg)
		keys := tbl.advertised()
		if !slices.IsSortedFunc(keys, func(a, b kmsg.ApiVersionsResponseApiKey) int { return int(a.ApiKey) - int(b.ApiKey) }) {
			t.Errorf("%s: advertised keys not sorted: %v", name, keys)
		}
		if len(keys) != len(tc.want) {
			t.Errorf("%s: advertised %d keys, want %d: %v", name, len(keys), len(tc.want), keys)
		}
		for _, k := range keys {
			a := tbl.lookup(k.ApiKey)
			if a == nil {
				t.Fatalf("%s: key %d advertised but not in the table", name, k.ApiKey)
			}
			if err := checkAPI(*a); err != nil {
				t.Errorf("%s: key %d: %v", name, k.ApiKey, err)
			}
			if w, ok := tc.want[k.ApiKey]; !ok || k.MinVersion != w[0] || k.MaxVersion != w[1] {
				t.Errorf("%s: key %d advertised %d-%d, want %v", name, k.ApiKey, k.MinVersion, k.MaxVersion, w)
			}
		}
		for key := range withData {
			if _, ok := tc.want[key]; !ok && tbl.lookup(key) != nil {
				t.Errorf("%s: key %d served without its backend", name, key)
			}
		}
	}
}

func TestCheckAPIRefusesBadRegistrations(t *testing.T) {
	h := func(*conn, *request) reply { return reply{} }
	un := func(*request) reply { return reply{} }
	for name, a := range map[string]api{
		"unknown key":           {key: 999, handle: h},
		"no handler":            {key: 0},
		"served above adv":      {key: 3, servedMax: 5, advertisedMax: 4, handle: h},
		"min above max":         {key: 3, servedMin: 3, servedMax: 2, advertisedMax: 4, handle: h},
		"above kmsg":            {key: 3, servedMax: 200, advertisedMax: 200, handle: h},
		"gap without answer":    {key: 0, servedMin: 3, servedMax: 12, advertisedMax: 12, handle: h},
		"answer without gap":    {key: 0, servedMax: 12, advertisedMax: 12, handle: h, unsupported: un},
		"negative advertised":   {key: 0, advertisedMin: -1, servedMax: 3, advertisedMax: 3, handle: h},
		"served below advertis": {key: 0, advertisedMin: 2, servedMin: 1, servedMax: 3, advertisedMax: 3, handle: h},
	} {
		if err := checkAPI(a); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := checkAPI(api{key: 0, servedMin: 3, servedMax: 12, advertisedMax: 12, handle: h, unsupported: un}); err != nil {
		t.Errorf("produce-like registration refused: %v", err)
	}
}

func TestApiVersionsAnswer(t *testing.T) {
	keys := newTable(&Config{Backend: &fakeBackend{}, Data: newFakeData()}).advertised()
	for v := int16(0); v <= 4; v++ {
		resp := apiVersionsResponse(apiVersionsReq(v), 4, keys)
		if resp.Version != v || resp.ErrorCode != 0 || !sameKeys(resp.ApiKeys, keys) {
			t.Errorf("v%d: version %d error %d keys %v", v, resp.Version, resp.ErrorCode, resp.ApiKeys)
		}
	}
	for _, v := range []int16{5, 99, 32767} {
		resp := apiVersionsResponse(apiVersionsReq(v), 4, keys)
		if resp.Version != 0 || resp.ErrorCode != kerr.UnsupportedVersion.Code || !sameKeys(resp.ApiKeys, keys) {
			t.Errorf("v%d: version %d error %d keys %v, want v0 UNSUPPORTED_VERSION with the keys", v, resp.Version, resp.ErrorCode, resp.ApiKeys)
		}
	}
	bad := apiVersionsReq(3)
	bad.ClientSoftwareName = "bad name!"
	if resp := apiVersionsResponse(bad, 4, keys); resp.ErrorCode != kerr.InvalidRequest.Code || len(resp.ApiKeys) != 0 {
		t.Errorf("bad software name: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
	old := apiVersionsReq(2)
	old.ClientSoftwareName = "bad name!" // not sent before v3
	if resp := apiVersionsResponse(old, 4, keys); resp.ErrorCode != 0 {
		t.Errorf("v2 checked the software name: error %d", resp.ErrorCode)
	}
}

func TestValidSoftwareField(t *testing.T) {
	for s, want := range map[string]bool{
		"librdkafka": true, "2.11.0": true, "kgo": true, "a": true, "a-b.c": true, "x1": true,
		"": false, "-a": false, "a-": false, ".a": false, "a b": false, "a_b": false, "é": false,
	} {
		if got := validSoftwareField(s); got != want {
			t.Errorf("%q: %v, want %v", s, got, want)
		}
	}
}

func TestParseTopicID(t *testing.T) {
	id := testTopicID(9)
	got, err := ParseTopicID(id.String())
	if err != nil || got != id {
		t.Fatalf("round trip: %v %v", got, err)
	}
	if z, err := ParseTopicID(""); err != nil || !z.IsZero() {
		t.Errorf("empty: %v %v", z, err)
	}
	for _, s := range []string{"!!", "AAAA", id.String() + "AA"} {
		if _, err := ParseTopicID(s); !errors.Is(err, ErrBadTopicID) {
			t.Errorf("%q: %v, want ErrBadTopicID", s, err)
		}
	}
}

func TestConfigDefaultsAndValidation(t *testing.T) {
	c := Config{Backend: &fakeBackend{}}.withDefaults()
	if c.MaxRequestBytes != DefaultMaxRequestBytes || c.IdleTimeout != DefaultIdleTimeout || c.MaxInFlight != DefaultMaxInFlight || c.LogEvery != DefaultLogEvery || c.Logger == nil {
		t.Errorf("defaults: %+v", c)
	}
	for name, cfg := range map[string]Config{
		"no backend":   {},
		"negative max": {Backend: &fakeBackend{}, MaxRequestBytes: -1},
		"negative idl": {Backend: &fakeBackend{}, IdleTimeout: -1},
		"negative inf": {Backend: &fakeBackend{}, MaxInFlight: -1},
		"negative log": {Backend: &fakeBackend{}, LogEvery: -1},
	} {
		if _, err := NewServer(cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: %v, want ErrBadConfig", name, err)
		}
	}
}

func TestCheckLength(t *testing.T) {
	for _, tc := range []struct {
		size   int32
		reason string
	}{
		{-1, reasonBadLength}, {-1 << 31, reasonBadLength}, {0, reasonBadLength}, {headerSize - 1, reasonBadLength},
		{headerSize, ""}, {1000, ""}, {1001, reasonFrameTooLarge},
	} {
		err := checkLength(tc.size, 1000)
		if got := ""; err != nil {
			got = err.reason
			if got != tc.reason {
				t.Errorf("size %d: %q, want %q", tc.size, got, tc.reason)
			}
		} else if tc.reason != "" {
			t.Errorf("size %d: accepted, want %q", tc.size, tc.reason)
		}
	}
}

func TestReadFrame(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 30000) // several chunks
	got, err := readFrame(iotest.OneByteReader(bytes.NewReader(data)), len(data))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("one byte at a time: %d bytes, %v", len(got), err)
	}
	got, err = readFrame(iotest.DataErrReader(bytes.NewReader(data[:100])), 100)
	if err != nil || len(got) != 100 {
		t.Fatalf("data with EOF: %d bytes, %v", len(got), err)
	}
	got, err = readFrame(bytes.NewReader(data[:100]), 200)
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(got) != 100 {
		t.Fatalf("short: %d bytes, %v", len(got), err)
	}
}

// rawHeader builds a frame body: key, version, correlation id, client id
// "c", then rest.
func rawHeader(key, version int16, corr int32, rest ...byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = append(b, 0, 1, 'c')
	return append(b, rest...)
}

func TestParseRequest(t *testing.T) {
	body := func(req kmsg.Request) []byte { return frame(req, 5)[4:] }
	tbl := newTable(&Config{Backend: &fakeBackend{}}) // no data backend: Produce is not served
	for _, tc := range []struct {
		name    string
		frame   []byte
		reason  string
		version int16
	}{
		{"metadata v1", body(metadataReq(1, "a")), "", 1},
		{"metadata v12 flexible", body(metadataReq(12, "a")), "", 12},
		{"apiversions v3", body(apiVersionsReq(3)), "", 3},
		{"apiversions v99 body ignored", rawHeader(18, 99, 5, 0, 0xff, 0xff), "", 99},
		{"short header", []byte{0, 3, 0, 1, 0, 0}, reasonBadHeader, 1},
		{"client id too long", rawHeader(3, 1, 5)[:9], reasonBadHeader, 1},
		{"unknown key", rawHeader(999, 0, 5), reasonUnknownKey, 0},
		{"unserved key", rawHeader(0, 9, 5), reasonUnknownKey, 9},
		{"negative key", rawHeader(-1, 0, 5), reasonUnknownKey, 0},
		{"version above", rawHeader(3, 13, 5), reasonBadVersion, 13},
		{"negative version", rawHeader(3, -1, 5), reasonBadVersion, -1},
		{"apiversions negative", rawHeader(18, -1, 5), reasonBadVersion, -1},
		{"bad tags", rawHeader(3, 9, 5, 5), reasonBadHeader, 9},
		{"bad body", rawHeader(3, 1, 5, 0, 0, 0, 9), reasonBadBody, 1},
	} {
		h, req, err := parseRequest(tbl, tc.frame)
		switch {
		case tc.reason == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.reason != "" && (err == nil || err.reason != tc.reason):
			t.Errorf("%s: %v, want %s", tc.name, err, tc.reason)
		case tc.reason == "" && (req == nil || req.GetVersion() != tc.version || h.corr != 5):
			t.Errorf("%s: request %v, header %+v", tc.name, req, h)
		case tc.reason != reasonBadHeader && h.version != tc.version:
			t.Errorf("%s: header version %d, want %d", tc.name, h.version, tc.version)
		}
	}
}

func TestAppendResponseHeaders(t *testing.T) {
	for _, tc := range []struct {
		resp kmsg.Response
		tag  bool
	}{
		{func() kmsg.Response { r := kmsg.NewPtrApiVersionsResponse(); r.SetVersion(3); return r }(), false},
		{func() kmsg.Response { r := kmsg.NewPtrMetadataResponse(); r.SetVersion(9); return r }(), true},
		{func() kmsg.Response { r := kmsg.NewPtrMetadataResponse(); r.SetVersion(8); return r }(), false},
	} {
		b := appendResponse([]byte("prefix"), 42, tc.resp)
		b = b[len("prefix"):]
		if n := binary.BigEndian.Uint32(b); int(n) != len(b)-4 {
			t.Errorf("%T v%d: length %d, frame %d", tc.resp, tc.resp.GetVersion(), n, len(b)-4)
		}
		if corr := binary.BigEndian.Uint32(b[4:]); corr != 42 {
			t.Errorf("corr %d", corr)
		}
		want := tc.resp.AppendTo(nil)
		if tc.tag {
			want = append([]byte{0}, want...)
		}
		if !bytes.Equal(b[8:], want) {
			t.Errorf("%T v%d: body %x, want %x", tc.resp, tc.resp.GetVersion(), b[8:], want)
		}
	}
}

// sameKeys compares ApiVersions key lists by key and range.
func sameKeys(a, b []kmsg.ApiVersionsResponseApiKey) bool {
	return slices.EqualFunc(a, b, func(x, y kmsg.ApiVersionsResponseApiKey) bool {
		return x.ApiKey == y.ApiKey && x.MinVersion == y.MinVersion && x.MaxVersion == y.MaxVersion
	})
}
