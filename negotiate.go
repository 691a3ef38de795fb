package squeeze

// negotiate picks the coding for a response from the request's
// Accept-Encoding field lines. It returns an index into offers, or -1 for
// identity. PLACEHOLDER: being replaced by the full RFC 9110 implementation.
func negotiate(acceptEncoding []string, offers []offer) int {
	return -1
}
