// Command argocd-cmp-server is Argo CD's config management plugin server, unchanged: the same
// cobra command that Argo CD's multi-call binary runs when it is invoked as argocd-cmp-server.
package main

import (
	"os"

	cmpserver "github.com/argoproj/argo-cd/v3/cmd/argocd-cmp-server/commands"
)

func main() {
	if err := cmpserver.NewCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
