package identity

// FileCheckInterval is how often a JWKS file is looked at again, for the
// tests of identity_test.
const FileCheckInterval = fileCheckInterval
