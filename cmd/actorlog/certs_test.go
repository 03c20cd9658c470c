// certs_test.go: `actorlog certs init` end to end in a temporary directory
// (files, modes, reruns, refusals). No cluster.

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/actorlog/actorlog/internal/tlsconf"
)

// runCerts runs `actorlog certs init ARGS...` and returns its output.
func runCerts(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"certs", "init"}, args...))
	err := root.Execute()
	return out.String(), err
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dirFiles lists the names in dir.
func dirFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestCertsInitWritesUsableFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	out, err := runCerts(t, "--dir", dir, "--hosts", "host1,host2,host3", "--clients", "admin,app", "--san", "lb.example,10.1.2.3", "--days", "30")
	if err != nil {
		t.Fatalf("certs init: %v\n%s", err, out)
	}
	want := []string{"admin.crt", "admin.key", "app.crt", "app.key", "ca.crt", "ca.key", "host1.crt", "host1.key", "host2.crt", "host2.key", "host3.crt", "host3.key"}
	if got := dirFiles(t, dir); !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
	for _, name := range want {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		wantMode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".key") {
			wantMode = 0o600
		}
		if st.Mode().Perm() != wantMode {
			t.Errorf("%s mode %v, want %v", name, st.Mode().Perm(), wantMode)
		}
	}
	for _, s := range []string{
		"host1: --tls-cert " + filepath.Join(dir, "host1.crt") + " --tls-key " + filepath.Join(dir, "host1.key") + " --tls-ca " + filepath.Join(dir, "ca.crt"),
		"host3: --tls-cert",
		"client app created: " + filepath.Join(dir, "app.crt"),
		`CA "actorlog dev CA" created`,
	} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	// The files load and validate as TLS material, and name the right principals.
	for name, want := range map[string]string{"host2": "Host:host2", "app": "User:app"} {
		r, err := tlsconf.NewReloader(tlsconf.Files{Cert: filepath.Join(dir, name+".crt"), Key: filepath.Join(dir, name+".key"), CA: filepath.Join(dir, "ca.crt")}, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p, err := tlsconf.PrincipalFromCert(r.Leaf())
		if err != nil || p.String() != want {
			t.Errorf("%s: principal %v, %v; want %s", name, p, err, want)
		}
		if name == "host2" {
			for _, san := range []string{"host2", "localhost", "127.0.0.1", "::1", "lb.example", "10.1.2.3"} {
				if err := r.Leaf().VerifyHostname(san); err != nil {
					t.Errorf("host2 SAN %s: %v", san, err)
				}
			}
		}
		if days := r.Leaf().NotAfter.Sub(r.Leaf().NotBefore).Hours() / 24; days < 29.9 || days > 30.1 {
			t.Errorf("%s valid for %.1f days, want 30", name, days)
		}
	}
}

func TestCertsInitRerunKeepsCA(t *testing.T) {
	dir := t.TempDir()
	if out, err := runCerts(t, "--dir", dir, "--hosts", "host1", "--clients", "admin"); err != nil {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	ca, host1 := readFile(t, filepath.Join(dir, "ca.crt")), readFile(t, filepath.Join(dir, "host1.crt"))

	out, err := runCerts(t, "--dir", dir, "--hosts", "host1,host4")
	if err != nil {
		t.Fatalf("rerun: %v\n%s", err, out)
	}
	if !bytes.Equal(readFile(t, filepath.Join(dir, "ca.crt")), ca) {
		t.Error("rerun replaced the CA")
	}
	if !bytes.Equal(readFile(t, filepath.Join(dir, "host1.crt")), host1) {
		t.Error("rerun re-issued host1 without --force")
	}
	for _, s := range []string{"reused", "host host1 kept", "host host4 created"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	if _, err := tlsconf.NewReloader(tlsconf.Files{Cert: filepath.Join(dir, "host4.crt"), Key: filepath.Join(dir, "host4.key"), CA: filepath.Join(dir, "ca.crt")}, nil); err != nil {
		t.Errorf("host4 does not chain to the kept CA: %v", err)
	}

	// A kept host certificate must carry requested SANs.
	if out, err := runCerts(t, "--dir", dir, "--hosts", "host1", "--san", "new.example"); err == nil || !strings.Contains(err.Error(), `lacks SAN "new.example"`) {
		t.Errorf("kept cert without a requested SAN: %v\n%s", err, out)
	}
	// --force re-issues under the same CA.
	if out, err := runCerts(t, "--dir", dir, "--hosts", "host1", "--force"); err != nil || !strings.Contains(out, "host host1 re-issued") {
		t.Fatalf("--force: %v\n%s", err, out)
	}
	if bytes.Equal(readFile(t, filepath.Join(dir, "host1.crt")), host1) || !bytes.Equal(readFile(t, filepath.Join(dir, "ca.crt")), ca) {
		t.Error("--force did not re-issue host1 under the same CA")
	}
	// --new-ca replaces the CA and re-issues what is named.
	if out, err := runCerts(t, "--dir", dir, "--hosts", "host1", "--new-ca"); err != nil || !strings.Contains(out, "CA was replaced") {
		t.Fatalf("--new-ca: %v\n%s", err, out)
	}
	if bytes.Equal(readFile(t, filepath.Join(dir, "ca.crt")), ca) {
		t.Error("--new-ca kept the CA")
	}
	// host4 was not named, so it no longer chains; a rerun says so.
	if _, err := runCerts(t, "--dir", dir, "--hosts", "host4"); err == nil || !strings.Contains(err.Error(), "does not verify") {
		t.Errorf("stale host4 after --new-ca: %v", err)
	}

	// Half a CA is refused, not silently replaced.
	if err := os.Remove(filepath.Join(dir, "ca.key")); err != nil {
		t.Fatal(err)
	}
	if _, err := runCerts(t, "--dir", dir, "--hosts", "host5"); err == nil || !strings.Contains(err.Error(), "ca.key does not") {
		t.Errorf("ca.crt without ca.key: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "host5.crt")); !os.IsNotExist(err) {
		t.Errorf("host5.crt written despite the refused CA: %v", err)
	}
}

func TestCertsInitRejectsBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--hosts", "host1,../evil"}, "path separator"},
		{[]string{"--hosts", "host1,,host2"}, "empty name"},
		{[]string{"--hosts", "host1", "--clients", "host1"}, "duplicates host name"},
		{[]string{"--hosts", "host1,HOST1"}, "duplicates host name"},
		{[]string{"--clients", "ca"}, "reserved"},
		{[]string{"--clients", "a:b"}, "contains ':'"},
		{[]string{"--hosts", "host1", "--san", "bad name"}, "bad SAN"},
		{[]string{"--hosts", "host1", "--days", "0"}, "--days must be positive"},
		{[]string{}, "nothing to create"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			out, err := runCerts(t, append([]string{"--dir", dir}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q\n%s", err, tc.want, out)
			}
			if files := dirFiles(t, dir); len(files) != 0 {
				t.Errorf("files written despite the error: %v", files)
			}
		})
	}
	if _, err := runCerts(t, "--hosts", "host1"); err == nil || !strings.Contains(err.Error(), "--dir is required") {
		t.Errorf("no --dir: %v", err)
	}
}
