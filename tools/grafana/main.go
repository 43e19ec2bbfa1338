// Command grafana-dashboard-check reads Grafana dashboard JSON files and checks each against
// Grafana's dashboard schema as the Grafana Foundation SDK generates it from Grafana's own kinds
// (github.com/grafana/grafana-foundation-sdk/go v0.0.22, dashboard/types_gen.go): strict
// unmarshalling (unknown fields, wrong types and missing required fields refused, each panel's
// options, field config and queries decoded by its plugin's own types) and Validate().
//
//	grafana-dashboard-check FILE...
//
// Prints one line per problem, `FILE: path: what`, and exits 1 when any file has one.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// problem is err unless it is the SDK's empty list of build errors (a nil slice in an error).
func problem(err error) error {
	var built cog.BuildErrors
	if errors.As(err, &built) && len(built) == 0 {
		return nil
	}
	return err
}

func check(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var board dashboard.Dashboard
	if err := problem(board.UnmarshalJSONStrict(raw)); err != nil {
		return err
	}
	return problem(board.Validate())
}

func main() {
	plugins.RegisterDefaultPlugins()
	failed := false
	for _, path := range os.Args[1:] {
		if err := check(path); err != nil {
			fmt.Printf("%s: %v\n", path, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}
