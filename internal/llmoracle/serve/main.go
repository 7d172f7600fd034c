// Command serve runs the noisy oracle model (package llmoracle) on a local
// port, so that `triage eval` can be measured against it end to end:
//
//	go run ./internal/llmoracle/serve --listen 127.0.0.1:8089 --seed 1 \
//	    --labels ../shared/fixtures/frameworks/labels.json --corpus ../shared/corpora/triage_corpus_a.json
//	TRIAGE_LLM_BASE_URL=http://127.0.0.1:8089/v1 TRIAGE_LLM_MODEL=noisy-oracle \
//	    go run ./cmd/triage eval --labels … --corpus …
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"

	"github.com/triage-otel/triage/internal/llmoracle"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	var labels, corpora list
	listen := flag.String("listen", "127.0.0.1:8089", "address to serve on")
	seed := flag.Uint64("seed", 1, "noise seed")
	flag.Var(&labels, "labels", "labels.json to learn (repeatable)")
	flag.Var(&corpora, "corpus", "corpus to learn (repeatable)")
	flag.Parse()
	o := llmoracle.New(*seed)
	for _, f := range labels {
		if err := o.LearnCaptures(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	for _, f := range corpora {
		if err := o.LearnCorpus(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	log.Printf("noisy oracle on http://%s/v1 (seed %d)", *listen, *seed)
	log.Fatal(http.ListenAndServe(*listen, o))
}
