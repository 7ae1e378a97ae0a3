// Package extest holds what the real-target examples' tests share: their
// TestMain, their folder and spec files, the programs and privileges a
// trial needs, and building their clients.
package extest
