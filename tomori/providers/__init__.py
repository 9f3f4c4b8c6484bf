"""Model providers: each turns one SDK's stream into the events of `tomori.providers.base`."""
