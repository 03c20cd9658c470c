// config.go: flags may also come from ACTORLOG_* environment variables and,
// for `actorlog host`, from a YAML file given with --config, as users of
// Kafka and etcd expect. Keys are the flag names (`etcd-peer: host1:7071`;
// ACTORLOG_ETCD_PEER=host1:7071). Precedence: command line, then
// environment, then file, then the flag's default.

package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// settingsFileAnnotation marks a command whose --config flag names a
// YAML settings file.
const settingsFileAnnotation = "actorlog/settings-file"

// envName is the environment variable of a flag: ACTORLOG_ETCD_PEER for
// --etcd-peer.
func envName(flag string) string {
	return "ACTORLOG_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// applyEnvAndConfig sets every flag not given on the command line from
// the environment or the --config file.
func applyEnvAndConfig(cmd *cobra.Command) error {
	flags := cmd.Flags()
	var file map[string]string
	// Only commands that say so take a settings file (topics create has
	// a --config of its own: topic configs).
	if cf := flags.Lookup("config"); cf != nil && cmd.Annotations[settingsFileAnnotation] == "true" {
		path := cf.Value.String()
		if !cf.Changed {
			path = os.Getenv(envName("config"))
		}
		if path != "" {
			var err error
			if file, err = loadConfig(path, flags); err != nil {
				return err
			}
		}
	}
	var errs []string
	flags.VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "config" {
			return
		}
		v, ok := os.LookupEnv(envName(f.Name))
		src := envName(f.Name)
		if !ok {
			v, ok = file[f.Name]
			src = "config file key " + f.Name
		}
		if !ok {
			return
		}
		if err := flags.Set(f.Name, v); err != nil {
			errs = append(errs, fmt.Sprintf("%s=%q: %v", src, v, err))
		}
	})
	if len(errs) > 0 {
		return fmt.Errorf("bad setting: %s", strings.Join(errs, "; "))
	}
	return nil
}

// loadConfig reads a flat YAML map of flag names to values. Lists (e.g.
// etcd-endpoints) may be YAML sequences. Unknown keys are errors.
func loadConfig(path string, flags *pflag.FlagSet) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	out := make(map[string]string, len(raw))
	var unknown []string
	for k, v := range raw {
		if flags.Lookup(k) == nil || k == "config" {
			unknown = append(unknown, k)
			continue
		}
		switch v := v.(type) {
		case nil:
			return nil, fmt.Errorf("config file %s: key %s has no value", path, k)
		case []any:
			parts := make([]string, len(v))
			for i, p := range v {
				parts[i] = fmt.Sprint(p)
			}
			out[k] = strings.Join(parts, ",")
		case map[string]any:
			return nil, fmt.Errorf("config file %s: key %s: want a value or a list, not a map", path, k)
		case float64:
			// JSON numbers: print integers without an exponent.
			if v == float64(int64(v)) {
				out[k] = fmt.Sprintf("%d", int64(v))
			} else {
				out[k] = fmt.Sprint(v)
			}
		default:
			out[k] = fmt.Sprint(v)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("config file %s: unknown keys %s (keys are the flag names, e.g. listen, etcd-peer)", path, strings.Join(unknown, ", "))
	}
	return out, nil
}
