// apiversions.go: ApiVersions (key 18), served and advertised v0-4.
//
// Behaviour:
//   - Lists every API of the table with its advertised range, by key, so a
//     client negotiates only what is served.
//   - A version above 4 (KIP-511): the body is not decoded and the answer is
//     a v0 response with UNSUPPORTED_VERSION and the table's key list; the
//     client retries at the highest ApiVersions version the list gives.
//     (Kafka lists only ApiVersions itself there; the whole list is a
//     superset that kgo and librdkafka read the same way.)
//   - v3+: client_software_name and client_software_version must match
//     [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?, else INVALID_REQUEST with
//     no keys, as Kafka answers.
//   - The response header is v0 (no tag section) at every version, flexible
//     v3+ included: a client cannot parse a tag section before it knows the
//     version.
//   - No features yet (SupportedFeatures and FinalizedFeatures empty,
//     FinalizedFeaturesEpoch -1).
//
// Error codes: UNSUPPORTED_VERSION (35), INVALID_REQUEST (42).

package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersionsKey is ApiVersions' key: its response header is always v0.
const apiVersionsKey = 18

func init() {
	register(api{key: apiVersionsKey, servedMin: 0, servedMax: 4, advertisedMin: 0, advertisedMax: 4, handle: handleApiVersions})
}

func handleApiVersions(c *conn, r *request) reply {
	return respond(apiVersionsResponse(r.kreq.(*kmsg.ApiVersionsRequest), r.api.advertisedMax, c.srv.table.advertised()))
}

// apiVersionsResponse answers req, maxVersion being the highest
// ApiVersions version served and keys the server's advertised APIs.
func apiVersionsResponse(req *kmsg.ApiVersionsRequest, maxVersion int16, keys []kmsg.ApiVersionsResponseApiKey) *kmsg.ApiVersionsResponse {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version > maxVersion {
		resp.Version = 0
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		resp.ApiKeys = keys
		return resp
	}
	if req.Version >= 3 && (!validSoftwareField(req.ClientSoftwareName) || !validSoftwareField(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	resp.ApiKeys = keys
	return resp
}

// validSoftwareField reports whether s matches Kafka's pattern for the
// client software name and version: [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?
func validSoftwareField(s string) bool {
	alnum := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	if s == "" || !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !alnum(c) && c != '-' && c != '.' {
			return false
		}
	}
	return true
}
