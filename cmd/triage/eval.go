package main

import (
	"fmt"
	"io"

	"github.com/triage-otel/triage/internal/evalset"
)

func runEval(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("eval", stderr)
	var labels, corpora stringList
	fs.Var(&labels, "labels", "labels.json of a capture set (`FILE`, repeatable)")
	fs.Var(&corpora, "corpus", "labelled error-string corpus (`FILE`, repeatable)")
	verbose := fs.Bool("verbose", false, "list every item, not only the failures")
	rest, err := parseInterleaved(fs, args)
	if err != nil {
		return exitUsage
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "triage eval: unexpected argument %q (use --labels or --corpus)\n", rest[0])
		return exitUsage
	}
	if len(labels) == 0 && len(corpora) == 0 {
		fmt.Fprintln(stderr, "triage eval: give --labels FILE and/or --corpus FILE")
		return exitUsage
	}
	var sets []evalset.Set
	for _, f := range labels {
		s, err := evalset.ScoreCaptures(f)
		if err != nil {
			fmt.Fprintf(stderr, "triage eval: %v\n", err)
			return exitFailed
		}
		sets = append(sets, s)
	}
	for _, f := range corpora {
		s, err := evalset.ScoreCorpus(f)
		if err != nil {
			fmt.Fprintf(stderr, "triage eval: %v\n", err)
			return exitFailed
		}
		sets = append(sets, s)
	}
	if _, failed := evalset.WriteReport(stdout, sets, *verbose); failed > 0 {
		return exitFailed
	}
	return exitOK
}
