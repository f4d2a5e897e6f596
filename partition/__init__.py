"""Router -> rank maps built from rack groups, cut links and lookahead."""
