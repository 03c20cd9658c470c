// export_test.go exposes internals to the external test package.

package cluster

// StopKeepAliveForTest stops renewing r's lease without revoking it, so
// tests can watch it expire.
func StopKeepAliveForTest(r *Registration) { r.stopKeepAlive() }
