/**
 * ISO 4217 List One (current currency and funds codes), the edition published 2026-01-01:
 * after XCG replaced ANG, ZWG replaced ZWL, SLE replaced SLL, XAD (Arab Accounting Dinar) was
 * added, CUC was withdrawn, and Croatia (HRK, 2023) and Bulgaria (BGN, 2026-01-01) adopted
 * the euro. XTS (reserved for testing) and XXX (no currency) are on the list but are not
 * money, so they are left out. Update this table when the maintenance agency amends the list.
 */
const ACTIVE_CODES = `
  AED AFN ALL AMD AOA ARS AUD AWG AZN BAM BBD BDT BHD BIF BMD BND BOB BOV BRL BSD BTN BWP BYN BZD
  CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP
  GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR
  KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN
  MXV MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD
  SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX
  USD USN UYI UYU UYW UZS VED VES VND VUV WST XAD XAF XAG XAU XBA XBB XBC XBD XCD XCG XDR XOF XPD
  XPF XPT XSU XUA YER ZAR ZMW ZWG`;

export const ACTIVE_CURRENCIES: ReadonlySet<string> = new Set(ACTIVE_CODES.trim().split(/\s+/));

export function isActiveCurrency(code: string): boolean {
  return ACTIVE_CURRENCIES.has(code);
}
