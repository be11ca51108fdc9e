# example/peer: no override; the registry decides.
package toolgate.grant
