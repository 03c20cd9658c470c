// sasl_scram_fuzz_test.go: the SCRAM messages a client sends before it is
// authenticated (anyone who reaches the port can) never panic the parser
// or the proof check, and a message that is not a proof of the password
// never verifies.

package kafka

import (
	"bytes"
	"encoding/base64"
	"errors"
	"testing"
)

// FuzzScramExchange feeds a client-first and a client-final message to a
// SCRAM-SHA-256 exchange for a known credential. "{nonce}" in the final
// message stands for the server's combined nonce, which the fuzzer cannot
// know, so that mutations reach the proof check.
func FuzzScramExchange(f *testing.F) {
	cred, err := NewScramCredential(ScramSHA256, "s3cret", 4096)
	if err != nil {
		f.Fatal(err)
	}
	proof := base64.StdEncoding.EncodeToString(make([]byte, 32))
	for _, s := range [][2]string{
		{"n,,n=alice,r=abcdefgh", "c=biws,r={nonce},p=" + proof},
		{"n,a=alice,n=alice,r=abc", "c=biws,r=clientnonce{nonce},p=" + proof},
		{"n,,m=ext,n=a=2Cb=3D,r=x", "c=biws,r={nonce},p=AAAA"},
		{"n,,n=alice,r=abc,ext=1", ""},
		{"y,,n=alice,r=abc", "c=eSws,r={nonce},p=" + proof},
		{"n,,n=,r=", "c=biws,r=,p="},
		{"", "\x00"},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, first, final []byte) {
		cf, err := parseScramClientFirst(first)
		if err != nil {
			if !errors.Is(err, errScramProtocol) {
				t.Fatalf("client-first %q: %v, want a protocol error", first, err)
			}
			return
		}
		s, err := newScramServer(ScramSHA256, cred, cf)
		if err != nil {
			t.Fatalf("server-first for %q: %v", first, err)
		}
		msg := bytes.ReplaceAll(final, []byte("{nonce}"), []byte(s.nonce))
		switch _, err := s.final(msg); {
		case err == nil:
			t.Fatalf("client-final %q verified without the password's proof", msg)
		case !errors.Is(err, errScramProtocol) && !errors.Is(err, errScramProof):
			t.Fatalf("client-final %q: %v, want a protocol or proof error", msg, err)
		}
	})
}
