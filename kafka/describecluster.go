// describecluster.go: DescribeCluster (key 60), v0-1 (v2, fenced
// brokers, is not advertised); needs Config.Admin (it is an admin API:
// kadm's DescribeCluster and the Java AdminClient's describeCluster).
//
// Behaviour: the cluster id, the controller's node id (-1 when none is
// elected) and every live host with a Kafka listener, with its
// advertised Kafka address and rack — the same data as Metadata, from
// Backend.Metadata. endpoint_type (v1+) 1 (BROKERS) is answered; 2
// (CONTROLLERS: KRaft controller listeners, which actorlog does not
// have) is UNSUPPORTED_ENDPOINT_TYPE. Authorized operations are not
// computed (INT32_MIN, "not requested", as without an authorizer).
//
// Error codes: UNSUPPORTED_ENDPOINT_TYPE (119).

package kafka

import (
	"context"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(api{key: 60, servedMin: 0, servedMax: 1, advertisedMin: 0, advertisedMax: 1,
		handle: handleDescribeCluster, enabled: adminEnabled})
}

// endpointBrokers is DescribeCluster's endpoint_type for broker
// listeners (the default).
const endpointBrokers = 1

func handleDescribeCluster(c *conn, r *request) reply {
	req := r.kreq.(*kmsg.DescribeClusterRequest)
	if req.Version >= 1 && req.EndpointType != endpointBrokers {
		resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
		resp.EndpointType = req.EndpointType
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("endpoint type %d: only brokers (1) are described", req.EndpointType))
		return respond(resp)
	}
	return c.async(r, func(ctx context.Context) (kmsg.Response, error) {
		md, err := c.srv.cfg.Backend.Metadata(ctx, MetadataQuery{})
		if err != nil {
			return nil, fmt.Errorf("describe cluster: %w", err)
		}
		return describeClusterResponse(req, md), nil
	})
}

// describeClusterResponse answers req from md. Pure.
func describeClusterResponse(req *kmsg.DescribeClusterRequest, md *ClusterMetadata) *kmsg.DescribeClusterResponse {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = endpointBrokers
	resp.ClusterID = md.ClusterID
	resp.ControllerID = md.ControllerID
	resp.ClusterAuthorizedOperations = math.MinInt32
	for _, b := range md.Brokers {
		sb := kmsg.NewDescribeClusterResponseBroker()
		sb.NodeID, sb.Host, sb.Port = b.NodeID, b.Host, b.Port
		if b.Rack != "" {
			sb.Rack = kmsg.StringPtr(b.Rack)
		}
		resp.Brokers = append(resp.Brokers, sb)
	}
	return resp
}
