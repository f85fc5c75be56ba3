module prewarm.dev/testcluster/pause

go 1.26.0
