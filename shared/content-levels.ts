// The content trees a page can be served from (papers 000/002): level TREES is the full site,
// lower levels are lighter; 0 means refused. Built at build time, chosen per client by the master.
export const TREES = 3;
