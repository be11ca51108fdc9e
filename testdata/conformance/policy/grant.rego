# scripts/conformance: no override; the registry's sections decide.
package toolgate.grant
