// Command triage classifies AI-agent runs from OTLP/JSON trace files,
// scores the classifier on labelled sets, and replays captures to a
// collector.
//
//	triage classify [--constraint S]... [--logs FILE]... [--explain] [--skip-empty] [--llm-endpoint URL --llm-model M] [--corrections F] FILE...
//	triage eval [--labels FILE]... [--corpus FILE]... [--corrections F FILE...] [--verbose] [--strict] [--llm-endpoint URL --llm-model M]
//	triage eval --labels FILE... --matrix [--harness DIR]
//	triage replay [--endpoint URL] [--fresh-ids] FILE...
//	triage sink [--listen HOST:PORT] [--secret S] [--tolerance D] [--read-timeout D] [--max-body N]
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(runWithStdin(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `usage:
  triage classify [--constraint S]... [--logs FILE]... [--explain] [--skip-empty] [--corrections F] FILE...
      classify every agent run in OTLP/JSON trace files ("-": standard input); one JSON
      object per run per line (--explain: the trajectory and the reasoning, for humans);
      GenAI log events in NAME.logs.json beside NAME.json, and in --logs files, are joined.
      A request of a multi-request file that cannot be read is reported and the others
      are classified; a file without spans exits 1 (--skip-empty: report it, go on)
  triage eval [--labels FILE]... [--corpus FILE]... [--corrections F FILE...] [--verbose] [--strict]
      score the classifier on a labelled capture set (labels.json), string corpora and a
      corrections file (JSONL) over trace FILEs; prints per-type precision/recall, misroutes,
      false failures, the corrections' coverage and "N passed, N failed"; exits 1 for a real
      failure, not for a typed failure answered unknown (--strict: for any)
  triage eval --labels FILE... --matrix [--harness DIR]
      the support matrix as Markdown: stack x scenario -> what triage answers, the
      instrumentation (and, with the capture harness DIR, package) versions, and per stack
      what its instrumentation cannot show
  classify and eval ask a model about the runs left unknown when $TRIAGE_LLM_BASE_URL (or
      --llm-endpoint URL) is set, with $TRIAGE_LLM_MODEL (--llm-model) and $TRIAGE_LLM_API_KEY;
      --llm-max-tokens, --llm-timeout; only gated answers are kept (see README)
  triage replay [--endpoint URL] [--fresh-ids] FILE...
      POST OTLP/JSON files to <endpoint>/v1/traces (default http://localhost:4318), and
      log events (NAME.logs.json beside NAME.json, or a logs file alone) to <endpoint>/v1/logs
  triage sink [--listen HOST:PORT] [--secret S] [--tolerance D] [--read-timeout D] [--write-timeout D]
              [--idle-timeout D] [--max-body N]
      local webhook receiver for the recovery_webhook exporter (default localhost:9000):
      verifies signatures, dedupes on webhook-id, prints each new decision as a JSON line;
      a request slower than --read-timeout (10s) or larger than --max-body (1 MiB) is refused
`

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1 // a file could not be read or sent, or the evaluation has failures
	exitUsage  = 2
)

// run is main without the process and without standard input: tests call
// it in-process.
func run(args []string, stdout, stderr io.Writer) int {
	return runWithStdin(args, strings.NewReader(""), stdout, stderr)
}

// runWithStdin is main without the process; stdin is what "-" reads.
func runWithStdin(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "classify":
		return runClassify(args[1:], stdin, stdout, stderr)
	case "eval":
		return runEval(args[1:], stdout, stderr)
	case "replay":
		return runReplay(args[1:], stdout, stderr)
	case "sink":
		return runSink(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "triage: unknown command %q\n%s", args[0], usage)
		return exitUsage
	}
}

// newFlagSet returns a flag set that reports errors on stderr instead of
// exiting.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("triage "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseInterleaved parses flags placed before, between or after the file
// arguments ("triage classify a.json --explain" works as users expect).
// Everything after "--" is a file.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return files, nil
		}
		// flag.Parse stops at the first non-flag, or after "--".
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(files, rest...), nil
		}
		files = append(files, rest[0])
		args = rest[1:]
	}
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error {
	if s == "" {
		return errors.New("empty value")
	}
	*l = append(*l, s)
	return nil
}
