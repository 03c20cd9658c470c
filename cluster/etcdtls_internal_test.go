// etcdtls_internal_test.go: the client port's accepted names.

package cluster

import (
	"slices"
	"testing"
)

func TestEtcdClientCNs(t *testing.T) {
	initial := "h1=https://a:1,h2=https://b:1"
	for _, tc := range []struct {
		cns  []string
		want []string
	}{
		{nil, []string{"h1", "h2"}},
		{[]string{"admin"}, []string{"h1", "h2", "admin"}},
		{[]string{"h2", "", "ops", "ops"}, []string{"h1", "h2", "ops"}},
		{[]string{"admin", "*"}, nil},
	} {
		got := (&EtcdTLS{ClientCNs: tc.cns}).clientCNs(initial)
		if !slices.Equal(got, tc.want) {
			t.Errorf("ClientCNs %q: accepted %q, want %q", tc.cns, got, tc.want)
		}
	}
}
