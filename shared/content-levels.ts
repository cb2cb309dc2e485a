// The content levels a page can be served from (papers 000/002): level CONTENT_LEVELS is the
// full site, lower levels are lighter; 0 means refused. Built at build time, chosen per client by
// the master. (The papers call a level's files a content tree; ews says content level throughout.)
export const CONTENT_LEVELS = 3;
