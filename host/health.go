// health.go: what /healthz checks, so that it fails whenever the host
// cannot serve: the host registration (lost: fenced), the broker and
// controller actors (not running: dead, and waiting to be respawned), the
// partitions the broker reports (a replica not running although it should,
// a log in a failed state, a high-watermark checkpoint that cannot be
// written), and the open descriptors against the soft
// RLIMIT_NOFILE. Answers 200 or 503, with a JSON body that lists what is
// wrong. It never waits on an actor: every source is a thread-safe
// snapshot.

package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/messages"
)

// HealthDescriptorHeadroom is, by default, how many descriptors must stay
// free under the soft RLIMIT_NOFILE (or 10 % of it, if fewer) for
// /healthz to pass: with fewer, a burst of connections or segments may
// run the host, or its embedded etcd (for which EMFILE is fatal), out of
// descriptors. A host at its full partition capacity keeps
// cluster.ReservedDescriptors free, above this.
const HealthDescriptorHeadroom = cluster.ReservedDescriptors / 4

// maxHealthProblems caps the partition lines one /healthz answer lists.
const maxHealthProblems = 50

// healthReport is /healthz's body.
type healthReport struct {
	Status   string   `json:"status"` // "ok" or "unhealthy"
	HostID   int32    `json:"host_id"`
	Name     string   `json:"name"`
	Problems []string `json:"problems,omitempty"`
}

// serveHealth answers /healthz.
func (h *Host) serveHealth(w http.ResponseWriter, _ *http.Request) {
	rep := healthReport{Status: "ok", HostID: h.hostID.Load(), Name: h.cfg.Name, Problems: h.healthProblems()}
	code := http.StatusOK
	if len(rep.Problems) > 0 {
		rep.Status, code = "unhealthy", http.StatusServiceUnavailable
	}
	body, err := json.Marshal(rep)
	if err != nil {
		http.Error(w, fmt.Sprintf("encode health report: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if _, err := w.Write(append(body, '\n')); err != nil {
		h.logger.WithError(err).Debug("writing the /healthz answer failed")
	}
}

// healthProblems lists what keeps the host from serving (none: healthy).
func (h *Host) healthProblems() []string {
	var problems []string
	if h.reg != nil {
		select {
		case <-h.reg.Done():
			problems = append(problems, "host registration lost: the host is fenced")
		default:
		}
	}
	if h.system != nil {
		for _, name := range []string{messages.BrokerActorID, messages.ControllerActorID} {
			if _, alive := h.system.ProcessRegistry.GetLocal(name); !alive {
				problems = append(problems, fmt.Sprintf("%s actor is not running", name))
			}
		}
	}
	if h.brokerHealth != nil {
		lines, total := h.brokerHealth.Problems(maxHealthProblems)
		problems = append(problems, lines...)
		if total > len(lines) {
			problems = append(problems, fmt.Sprintf("and %d more partitions", total-len(lines)))
		}
	}
	if p := descriptorProblem(h.cfg.HealthDescriptorRatio, h.logger); p != "" {
		problems = append(problems, p)
	}
	return problems
}

// descriptorThreshold is the most open descriptors /healthz tolerates
// under limit: ratio of it when ratio is set, else all but
// HealthDescriptorHeadroom or 10 % of it, whichever is fewer. Pure.
func descriptorThreshold(limit uint64, ratio float64) uint64 {
	if ratio > 0 {
		return uint64(ratio * float64(limit))
	}
	return limit - min(uint64(HealthDescriptorHeadroom), limit/10)
}

// descriptorProblem says whether the open descriptors exceed
// descriptorThreshold ("" when they do not).
func descriptorProblem(ratio float64, logger *logrus.Entry) string {
	open, limit, err := descriptorUsage()
	if err != nil {
		// Failing to open /proc/self/fd at all is the symptom itself
		// (EMFILE); anything else is not the host's health.
		if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
			return fmt.Sprintf("open descriptors: %v", err)
		}
		logger.WithError(err).Debug("cannot count open descriptors")
		return ""
	}
	if most := descriptorThreshold(limit, ratio); limit > 0 && uint64(open) > most {
		return fmt.Sprintf("open descriptors %d exceed %d, near the limit %d (RLIMIT_NOFILE)", open, most, limit)
	}
	return ""
}

// descriptorUsage counts this process's open descriptors (/proc/self/fd,
// less the one listing it) and reads its soft RLIMIT_NOFILE.
func descriptorUsage() (open int, limit uint64, err error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, fmt.Errorf("read RLIMIT_NOFILE: %w", err)
	}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, lim.Cur, fmt.Errorf("list descriptors: %w", err)
	}
	names, err := d.Readdirnames(-1)
	if cerr := d.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return 0, lim.Cur, fmt.Errorf("list descriptors: %w", err)
	}
	return len(names) - 1, lim.Cur, nil
}
