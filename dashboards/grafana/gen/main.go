// Command gen writes the Grafana dashboard dashboards/grafana/agent-failures.json
// from the Go definition in dashboard.go (grafana-foundation-sdk), so the JSON
// is never edited by hand:
//
//	cd dashboards/grafana/gen && go generate
//
// (or `go run . -out ../agent-failures.json` there). It is a module of its
// own, so the Grafana SDK stays out of the library's go.mod.
// TestCheckedInDashboardIsGenerated fails when the checked-in file differs.
package main

//go:generate go run . -out ../agent-failures.json

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	out := flag.String("out", "", "file to write the dashboard JSON to (default: stdout)")
	flag.Parse()

	b, err := dashboardJSON()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	if *out == "" {
		_, err = os.Stdout.Write(b)
	} else {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
