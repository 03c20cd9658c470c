// Package tlsconf builds the TLS configurations hosts and clients use for
// mutual TLS, from PEM files that can be reloaded while the process runs,
// and names the peer of a verified connection as a Kafka-style principal.
//
// # Files and reloading
//
// A Reloader holds a certificate, its key and the CA pool that peers are
// verified against (Files). NewReloader and Reloader.Reload validate what
// they read: the key matches the certificate, the certificate is within its
// validity period, every CA certificate parses, and the certificate verifies
// against the CA pool. A failed Reload keeps the material already loaded.
// The configs from ServerConfig and ClientConfig read the current material
// at each handshake, so a Reload applies to new connections without
// rebuilding them; established connections are not touched.
//
// # Principals
//
// The principal of a peer comes from the leaf of its verified chain:
//
//   - a certificate whose Subject has the Organizational Unit "actorlog-host"
//     (HostOU) names a host: its Common Name is the host name, and the
//     principal is "Host:<CN>";
//   - any other certificate names a user by its Common Name: "User:<CN>".
//
// A certificate with an empty Common Name has no principal. The convention
// is only as strong as the CA: whoever holds the CA key can issue host
// certificates, so the CA must be private to the cluster and user
// certificates must never carry HostOU. internal/certs issues certificates
// that follow this convention (`actorlog certs init`).
package tlsconf
